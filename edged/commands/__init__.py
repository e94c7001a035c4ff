"""Subcommands of `edged`. Each module has `add_parser(subparsers)` that sets `func`."""

from __future__ import annotations

from . import cache, check_config, devices, ha, run, say, voices
from .common import CommandError

COMMANDS = (say, voices, run, cache, devices, check_config, ha)

__all__ = ["COMMANDS", "CommandError"]
