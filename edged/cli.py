"""`edged` command line: one subcommand module per job under edged/commands/."""

from __future__ import annotations

import argparse
import logging
import sys
import typing
from collections.abc import Sequence

from . import __version__
from .commands import COMMANDS, CommandError, command_modules
from .commands.common import one_line
from .config import ConfigError
from .voice import VoiceError


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line like every other error (its own print the
    usage over several lines first)."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"edged: {one_line(message)} (see `{self.prog} --help`)\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with `argv` naming one, of that command only (its module
    alone is imported: a start imports what it needs, not what the other commands do)."""
    parser = _Parser(
        prog="edged", description="Offline speech announcements: MQTT in, neural speech out."
    )
    parser.add_argument("--version", action="version", version=f"edged {__version__}")
    parser.add_argument("--debug", action="store_true", help="log debug messages to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")),
                  None)
    for module in command_modules(chosen if chosen in COMMANDS else None):
        module.add_parser(sub)
    return parser


_PREPARING_LOGGERS = ("edged.voice.piper.prepared", "edged.voice.prepare.progress")
"""Where preparing a voice is logged: its start, each stage with its time, its end."""


def _say_when_preparing() -> None:
    """A first use prepares a voice for this CPU (about 20-30 s here, minutes on a Pi); a
    command quiet below warnings would sit silent all that time, so those lines show."""
    for name in _PREPARING_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command != "run":  # the daemon logs at its configured level
        _say_when_preparing()
    try:
        status = args.func(args)
    except (CommandError, ConfigError, VoiceError) as err:
        # Errors at the edge: one line a person can act on, no traceback, status 2.
        print(f"edged: {one_line(err)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(status or 0)
