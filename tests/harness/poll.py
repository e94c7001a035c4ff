"""Polling, where the daemon offers no event to await (its open files and threads in /proc, a
count it reports only when asked): one bounded loop for every such wait."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(pred: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    """True once `pred` holds; False if it still does not after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
