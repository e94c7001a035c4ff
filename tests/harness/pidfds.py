"""Waiting for processes that are not this one's children to end: a pidfd turns readable when
its process exits (the kernel's event, no polling of /proc)."""

from __future__ import annotations

import os
import select
from pathlib import Path


def watch(pids: list[int]) -> list[int]:
    """A pidfd for each process still there (one that ended before is not listed)."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue
    return fds


def pid_written(fifo: Path, timeout_s: float = 60.0) -> tuple[int, int]:
    """(pid, a pidfd for it) as a child writes its pid into `fifo`, a named pipe: readable once
    the child wrote (Linux reports no hang-up before a first writer)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert select.select([fd], [], [], timeout_s)[0], "the child never started"
        pid = int(os.read(fd, 32))
    finally:
        os.close(fd)
    return pid, os.pidfd_open(pid)


def all_end(pidfds: list[int], timeout_s: float) -> bool:
    """Whether every watched process ends within `timeout_s` each; the pidfds are closed."""
    try:
        return all(select.select([fd], [], [], timeout_s)[0] for fd in pidfds)
    finally:
        for fd in pidfds:
            os.close(fd)
