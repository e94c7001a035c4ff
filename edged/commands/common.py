"""What every subcommand shares: the error that becomes one line on stderr, config loading."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TypeAlias

from ..config import CacheConfig, Config, load_config

DEFAULT_CONFIG = Path("config/edged.yaml")
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class CommandError(Exception):
    """Bad input on the command line; printed as one line on stderr, exit status 2."""


class Stopped(BaseException):
    """SIGTERM, SIGINT (Ctrl-C) or SIGHUP inside `signals_stop`. A BaseException, so no
    `except Exception` swallows it while `finally` blocks and context managers still run (a
    download's temporary file is removed)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@contextlib.contextmanager
def signals_stop() -> Iterator[None]:
    """Inside: the first of SIGTERM, SIGINT, SIGHUP raises Stopped (the default for SIGTERM
    and SIGHUP kills the process before any cleanup); later ones are ignored until the cleanup
    is done. Main thread only."""

    def stop(signum: int, frame: FrameType | None) -> None:
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def one_line(message: object) -> str:
    """An error message as the one line it must be on stderr or in a log (a YAML or OS error
    may span lines)."""
    return " ".join(str(message).split())


def add_config_argument(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument(
        "--config", "-c", type=Path, default=None, required=required,
        help="YAML config file (default: built-in defaults; `run` uses config/edged.yaml)",
    )


def config_from_args(args: argparse.Namespace, fallback: Path | None = None) -> Config:
    """The config named by --config, else `fallback` if it exists, else the defaults."""
    path = args.config or (fallback if fallback and fallback.exists() else None)
    if path:
        return load_config(path)
    # No config file: what is cached (prepared voices) goes to the user's cache folder, not
    # into a `cache/` under whatever folder the command was started from.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(xdg) if Path(xdg).is_absolute() else Path.home() / ".cache"
    return Config(cache=CacheConfig(dir=root / "edged"))
