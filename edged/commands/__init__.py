"""Subcommands of `edged`. Each module has `add_parser(subparsers)` that sets `func`.

Modules are imported by name when needed: `edged run` imports only `run` (the others bring
numpy, paho, PortAudio... that a start does not need before READY; see docs/startup.md)."""

from __future__ import annotations

import importlib
from types import ModuleType

from .common import CommandError

COMMANDS: dict[str, str] = {"say": "say", "voices": "voices", "run": "run", "cache": "cache",
                            "devices": "devices", "check-config": "check_config", "ha": "ha"}
"""Command name -> module name, in the order `edged --help` lists them."""


def command_modules(chosen: str | None = None) -> list[ModuleType]:
    """The module of `chosen` (a command name) alone, or every command's module in order."""
    names = [COMMANDS[chosen]] if chosen in COMMANDS else list(COMMANDS.values())
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


__all__ = ["COMMANDS", "CommandError", "command_modules"]
