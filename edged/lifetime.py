"""A child process's life tied to the daemon's: the kernel signals the child when the process
that started it dies, even by SIGKILL (the OOM killer, `kill -9`), when no `finally` runs. So
nothing edged starts (a voice preparer, `make run`'s private mosquitto) runs on after the daemon
is gone: a preparer would burn a small board's CPU for minutes, and a broker left behind would be
found by the next start and used without being owned (never stopped).

Linux only (prctl PR_SET_PDEATHSIG); elsewhere nothing is asked. The signal follows the thread
that started the child: start it from the main thread (a re-exec keeps that thread)."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from typing import Any, Final

_PR_SET_PDEATHSIG: Final = 1


def _find_prctl() -> Callable[..., Any] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL: Final = _find_prctl()
"""Looked up at import: between fork and exec (`preexec_fn`) the dynamic loader's lock may be
held by a thread that no longer exists, so the child must not look anything up."""


def signal_when_parent_dies(signum: int, parent: int) -> bool:
    """In the child, before it does anything else: ask for `signum` when `parent` dies. False
    when `parent` is already gone (it died before the request: nobody will send the signal, so
    the caller should exit); True otherwise, also where the kernel cannot be asked."""
    if _PRCTL is None:
        return True
    _PRCTL(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    return os.getppid() == parent
