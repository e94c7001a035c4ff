"""`edged check-config FILE`: the daemon's start-up checks, without starting it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..checks import load_and_check
from .common import DEFAULT_CONFIG, CommandError, Subparsers, add_config_argument, one_line


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "check-config", help="check a config file and everything it points to, then exit",
        description="Run the checks `edged run` does before starting: config keys and values, "
                    "voice files and their sha256, writable cache folder, MQTT password and "
                    "TLS files, WAV files, memory limit. Prints one line per problem on "
                    "stderr and exits 2, or prints 'config OK' and exits 0.",
    )
    p.add_argument("file", metavar="FILE", type=Path, nargs="?",
                   help=f"YAML config file (default: --config, else {DEFAULT_CONFIG})")
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.file and args.config and args.file != args.config:
        raise CommandError("give the config file once: FILE or --config, not both")
    path = args.file or args.config or (DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None)
    if path is None:
        raise CommandError(f"no config file: give FILE (and no {DEFAULT_CONFIG} here)")
    config, problems = load_and_check(path)
    for problem in problems:
        print(f"edged: {one_line(problem)}", file=sys.stderr)
    if problems or config is None:
        return 2
    profile = config.profile
    print(f"edged: config OK: {path}" + ("" if profile == "default" else f" (profile {profile})"))
    return 0
