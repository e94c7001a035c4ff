"""What waits for the broker, and how much the daemon may take in meanwhile (flow control).

Every QoS 1 message edged publishes is *pending* until the broker's PUBACK. Nothing that
reports an outcome is ever dropped (events: there is a bounded number per accepted request);
what keeps the backlog bounded is the intake, not the output:

- QoS 1 requests: while `high` or more messages are pending, acknowledgements of received
  requests are *deferred* until the backlog is down to `high // 2`. The broker sends no more
  than the receive maximum of unacknowledged requests, so intake slows to what the broker
  takes back out: real backpressure.
- QoS 0 requests have no flow control in MQTT: while overloaded, the daemon refuses them
  (counted, and reported in aggregate by an `overloaded` event).
- "Latest value" topics (`<p>/state`): at most one message in flight and one waiting; a newer
  value replaces the waiting one instead of queueing behind it.
- Audio: bounded in bytes (the announcer waits while connected; dropped with a warning while
  disconnected, see link.py).

Thread-safe. Callers never call paho while holding this lock: paho holds its own message lock
while it calls on_publish, which comes here (lock order).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Latest:
    """A value to publish on a latest-value topic once the one in flight is acknowledged."""

    topic: str
    payload: bytes
    retain: bool


class Outbox(Generic[T]):
    """Pending messages, deferred acknowledgements (of type T) and latest-value topics."""

    def __init__(self, high: int) -> None:
        self.high = high
        self.low = high // 2
        self._cond = threading.Condition()
        self._pending: dict[int, tuple[str, int]] = {}
        self._bytes = 0
        self._acked_early: set[int] = set()
        self._deferred: deque[T] = deque()
        self._busy: dict[str, int | None] = {}
        """Latest-value topic -> mid in flight (None: being sent now)."""
        self._waiting: dict[str, Latest] = {}

    def __len__(self) -> int:
        with self._cond:
            return len(self._pending)

    @property
    def pending_bytes(self) -> int:
        with self._cond:
            return self._bytes

    def overloaded(self) -> bool:
        with self._cond:
            return len(self._pending) >= self.high or bool(self._deferred)

    # -- sending ----------------------------------------------------------------------------

    def sent(self, mid: int, topic: str, size: int, *, latest: bool = False) -> Latest | None:
        """Record a message handed to paho. For a latest-value topic, returns the value to
        send next when the broker acknowledged this one already (a PUBACK can beat us here)."""
        with self._cond:
            if mid not in self._acked_early:
                self._pending[mid] = (topic, size)
                self._bytes += size
                if latest:
                    self._busy[topic] = mid
                return None
            self._acked_early.discard(mid)
            return self._next_latest(topic) if latest else None

    def acked(self, mid: int) -> tuple[str, Latest | None, list[T]]:
        """A PUBACK: (its topic, a latest value now due, acknowledgements now released)."""
        with self._cond:
            topic, size = self._pending.pop(mid, ("?", -1))
            if size < 0:
                self._acked_early.add(mid)
                return topic, None, []
            self._bytes -= size
            due = self._next_latest(topic) if self._busy.get(topic) == mid else None
            released: list[T] = []
            if len(self._pending) <= self.low:
                released = list(self._deferred)
                self._deferred.clear()
            self._cond.notify_all()
            return topic, due, released

    def claim_latest(self, latest: Latest) -> bool:
        """True: send it now. False: one is in flight; this value waits (replacing an older
        waiting one) and goes out when that one is acknowledged."""
        with self._cond:
            if latest.topic in self._busy:
                self._waiting[latest.topic] = latest
                return False
            self._busy[latest.topic] = None
            return True

    def release_latest(self, topic: str) -> Latest | None:
        """The send of a claimed value failed: free the topic; returns what waited, if any."""
        with self._cond:
            return self._next_latest(topic)

    def _next_latest(self, topic: str) -> Latest | None:
        self._busy.pop(topic, None)
        due = self._waiting.pop(topic, None)
        if due is not None:
            self._busy[topic] = None
        return due

    # -- intake -----------------------------------------------------------------------------

    def defer(self, ack: T) -> bool:
        """Hold `ack` back while overloaded (True), to be released by `acked`."""
        with self._cond:
            if len(self._pending) < self.high and not self._deferred:
                return False
            self._deferred.append(ack)
            return True

    def wake(self) -> None:
        """The link went down: whoever waits in `wait_bytes` looks again."""
        with self._cond:
            self._cond.notify_all()

    def wait_room(self, timeout_s: float, still: threading.Event) -> None:
        """Wait while overloaded, until the backlog is down to half, `still` is cleared or
        `timeout_s` passed: what paces a stream that has no acknowledgement to defer."""
        with self._cond:
            self._cond.wait_for(lambda: (len(self._pending) <= self.low and not self._deferred)
                                or not still.is_set(), timeout_s)

    def wait_bytes(self, limit: int, timeout_s: float, still: threading.Event) -> bool:
        """Wait until fewer than `limit` bytes are pending (True), `still` is cleared (the
        link went down) or `timeout_s` passed (False)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._bytes < limit or not still.is_set(), timeout_s
            ) and self._bytes < limit
