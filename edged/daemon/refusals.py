"""What the daemon refused, counted; QoS 0 requests refused under overload, reported in bulk.

A request the daemon refuses gets its own `rejected` event, except a QoS 0 request refused
because too much waits for the broker: those are counted and reported by one `overloaded`
event at most every second (MQTT has no flow control for QoS 0, and an event each would add
to the backlog that made the daemon refuse them). The counts, by kind (`invalid`,
`too_large`, `busy`, `overloaded`), are in `<p>/state` as `refused`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Final

from .events import Event, Overloaded
from .requests import new_id

EVERY_S: Final = 1.0


class Refusals:
    """Thread-safe counters; `publish` sends an event, `outgoing` says how much waits."""

    def __init__(self, publish: Callable[[Event], object], outgoing: Callable[[], int]) -> None:
        self._publish = publish
        self._outgoing = outgoing
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._shed = 0
        """QoS 0 requests refused since the last `overloaded` event."""
        self._reported = 0.0

    def count(self, kind: str) -> None:
        with self._lock:
            self._counts[kind] += 1

    def shed(self) -> None:
        """One QoS 0 request refused under overload."""
        with self._lock:
            self._counts["overloaded"] += 1
            self._shed += 1
        self.report()

    def report(self, every_s: float = EVERY_S) -> None:
        """The `overloaded` event for what was shed since the last one, at most every
        `every_s` (the announcer calls this when idle too, so the last ones are reported)."""
        now = time.monotonic()
        with self._lock:
            count = self._shed
            if count == 0 or now - self._reported < every_s:
                return
            self._shed, self._reported = 0, now
        self._publish(Overloaded(new_id(), refused=count, error=(
            f"refused {count} QoS 0 request(s): {self._outgoing()} messages were waiting for "
            "the broker (mqtt.max_outgoing_messages); QoS 1 requests are slowed instead")))

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)
