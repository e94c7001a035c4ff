"""Process memory as the kernel counts it, and handing freed memory back to it."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import time
from collections.abc import Callable

_LOGGER = logging.getLogger(__name__)
_PAGE = os.sysconf("SC_PAGE_SIZE")
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameters
_M_ARENA_MAX = -8


_last_rss_mb = [0.0]


def rss_mb() -> float:
    """Resident set size now, in MB (10^6 bytes). When /proc cannot be read (out of descriptors
    for a moment), the last figure read: the memory guard runs on every request's path, and a
    request must never be lost to a file it could not open (issue 28)."""
    try:
        with open("/proc/self/statm") as f:
            _last_rss_mb[0] = int(f.read().split()[1]) * _PAGE / 1e6
    except OSError as err:
        _LOGGER.debug("Cannot read /proc/self/statm (%s): the last figure stands", err)
    return _last_rss_mb[0]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def release_freed_memory() -> None:
    """Ask glibc to return free heap pages to the kernel.

    After an ONNX session is dropped its memory is free but stays in the process: measured
    with the default voice, RSS fell from 165 to 72 MB only after malloc_trim(0).
    """
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def map_large_allocations(threshold_bytes: int = 128 << 10) -> None:
    """Blocks above `threshold_bytes` get a mapping of their own, unmapped when freed. glibc
    otherwise raises its threshold each time such a block is freed and keeps later ones in the
    heap: a process that makes and drops ONNX sessions (the preparing child) then cannot tell
    what one session costs from its resident set."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(_M_MMAP_THRESHOLD, threshold_bytes)


def keep_no_spare_memory(arenas: int = 2) -> None:
    """For `voice.memory_arena: false`: large blocks unmapped when freed (an inference's buffers
    leave with it), and at most `arenas` malloc arenas (glibc gives each new thread one of its
    own, whose free memory no other thread reuses). Measured with the default voice on one
    worker: RSS after the longest corpus line 117 MB instead of 142 with ONNX Runtime's arenas,
    at twice the CPU (each unmapping costs page faults, and interrupts the other cores)."""
    map_large_allocations()
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(_M_ARENA_MAX, arenas)


class MemoryGuard:
    """Says when the process has stayed above its budget long enough to refuse new work.

    A short peak (one long inference) is normal; only RSS above `limits.memory_mb` for
    `grace_s`, while synthesis is `busy`, turns requests away, until it falls again or the
    running synthesis ends. With nothing running nothing will give memory back by waiting (the
    idle reclaim has run; what stays is kept for reuse: an arena's regions, the heap's
    fragments): refusing then would refuse every request until a restart, so an idle daemon
    takes the next one, and says so in the log.
    """

    def __init__(self, budget_mb: float, grace_s: float = 5.0,
                 busy: Callable[[], bool] | None = None) -> None:
        self.budget_mb = budget_mb
        self.grace_s = grace_s
        self._busy = busy
        self._above_since: float | None = None
        self._told = False

    def over_budget(self) -> str | None:
        """None while within budget (or idle), else the reason to give the requester."""
        now_mb = rss_mb()
        if now_mb <= self.budget_mb:
            self._above_since, self._told = None, False
            return None
        now = time.monotonic()
        if self._above_since is None:
            self._above_since = now
        if now - self._above_since < self.grace_s:
            return None
        if self._busy is not None and not self._busy():
            if not self._told:
                self._told = True
                _LOGGER.warning(
                    "Memory: %.0f MB with no synthesis running, over limits.memory_mb %.0f "
                    "(memory kept for reuse after a peak); requests are taken one after the "
                    "other while it stays there: raise limits.memory_mb if this recurs",
                    now_mb, self.budget_mb)
            return None
        return (f"busy: the daemon uses {now_mb:.0f} MB, over limits.memory_mb "
                f"{self.budget_mb:.0f}; new requests wait until it falls or the running "
                f"synthesis ends")
