"""File descriptors: the network servers never take the ones the rest of the daemon needs.

Every connection is a descriptor. Left unbounded, 1,010 event-stream clients took all 1,024:
the phrase cache could not open a file (degraded until restart), MQTT requests were
acknowledged and dropped, asyncio logged a traceback per failed accept. So, at start-up:

    soft RLIMIT_NOFILE raised to the hard limit (systemd's default soft limit is 1024)
    HTTP connections + what the servers may hold besides (Wyoming's connections, refused ones
    being answered, one accept burst) + RESERVE must fit under it; else http.max_connections
    is lowered, with a warning, to what fits
"""

from __future__ import annotations

import logging
import os
import resource
from typing import Final

_LOGGER = logging.getLogger(__name__)
RESERVE: Final = 64
"""Beyond those open at start-up: the broker's reconnects, the audio device, cache and state
files, voices loaded later, the executor's pipes, a reload's checks."""
ACCEPT_BURST: Final = 32
"""Connections the loop may accept in one turn before the gate refuses them (the listening
socket's backlog, given to asyncio)."""
REFUSING: Final = 16
"""Refused connections kept open at once until their 503 is flushed (http/connections.py)."""
_CEILING: Final = 65536
"""Where an unlimited hard limit is met: more than the daemon will ever use."""


def raise_limit() -> int:
    """Raise the soft descriptor limit to the hard one where allowed; the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as err:
            _LOGGER.warning("Cannot raise the descriptor limit from %d to %d: %s", soft, target,
                            err)
            return soft
        _LOGGER.info("Descriptor limit raised from %d to %d", soft, target)
        return target
    return _CEILING if soft == resource.RLIM_INFINITY else soft


def open_now() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:  # no /proc: count what is open the slow way
        limit = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], _CEILING)
        return sum(1 for fd in range(limit) if _is_open(fd))


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def http_connections(wanted: int, others: int) -> int:
    """How many HTTP connections fit beside `others` (Wyoming's) and the reserve: `wanted`, or
    less with a warning; at least 1 (the limit is then plainly too low, and the log says so)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = _CEILING if soft == resource.RLIM_INFINITY else soft
    room = limit - open_now() - RESERVE - ACCEPT_BURST - REFUSING - others
    if room >= wanted:
        return wanted
    fits = max(1, room)
    _LOGGER.warning("http.max_connections lowered from %d to %d: the descriptor limit (%d) must "
                    "also hold the %d open now, Wyoming's %d and a reserve of %d for the broker, "
                    "the audio device and the cache (raise LimitNOFILE)", wanted, fits, limit,
                    open_now(), others, RESERVE + ACCEPT_BURST + REFUSING)
    return fits
