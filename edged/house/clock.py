"""What the kernel says about the wall clock: synchronized or not, and its error bounds.

Group members start at an instant of the wall clock, so they agree as well as their clocks do.
NTP (chrony, systemd-timesyncd) keeps Raspberry Pis on a LAN within a few milliseconds, and
tells the kernel: `adjtimex` (read-only, mode 0) returns the clock state, the STA_UNSYNC flag
and the maximum and estimated errors. This is what `timedatectl` shows as "System clock
synchronized". The state goes into `<p>/state` as `clock`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any, Final

_STA_UNSYNC: Final = 0x0040
_TIME_ERROR: Final = 5
_UNSYNC_MAXERROR_US: Final = 16_000_000
"""The kernel's bound: a maximum error of 16 s means nobody set the clock."""


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Timex(ctypes.Structure):
    # struct timex of <sys/timex.h> (the same on 64-bit x86 and ARM): what we read, then room.
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long),
                ("status", ctypes.c_int), ("constant", ctypes.c_long),
                ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
                ("time", _Timeval), ("tick", ctypes.c_long), ("rest", ctypes.c_long * 20)]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def clock_state() -> dict[str, Any]:
    """{"synchronized": bool, "max_error_ms", "est_error_ms"}; synchronized None when the
    kernel cannot be asked (not Linux)."""
    try:
        timex = _Timex()
        state = _libc().adjtimex(ctypes.byref(timex))
    except (OSError, AttributeError):
        return {"synchronized": None, "max_error_ms": None, "est_error_ms": None}
    if state < 0:
        return {"synchronized": None, "max_error_ms": None, "est_error_ms": None}
    synced = (state != _TIME_ERROR and not timex.status & _STA_UNSYNC
              and timex.maxerror < _UNSYNC_MAXERROR_US)
    return {"synchronized": bool(synced), "max_error_ms": round(timex.maxerror / 1000, 3),
            "est_error_ms": round(timex.esterror / 1000, 3)}
