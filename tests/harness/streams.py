"""Waiting on edged's synthesis scheduler: its own condition is notified whenever a stream's slot
is taken or freed, so a test waits for that instead of polling."""

from __future__ import annotations

from edged.synthesis import Scheduler

TIMEOUT_S = 10.0


def wait_streams(scheduler: Scheduler, source: str, count: int,
                 timeout: float = TIMEOUT_S) -> None:
    """Until `source` has `count` synthesis streams open at `scheduler`."""
    with scheduler._cond:
        ok = scheduler._cond.wait_for(lambda: scheduler._open[source] == count, timeout)
    assert ok, f"{source} has {scheduler.open_streams()[source]} streams open, not {count}"
