"""The events edged publishes on `<prefix>/event`, typed: one class per kind, one JSON shape.

Every accepted announcement gets `queued`, `started`, then exactly one final event, `finished`
or `failed`; a request that is not accepted gets one `rejected`, except QoS 0 requests refused
under overload, which are counted in an `overloaded` event. A control request gets a
`finished` naming its action. The JSON is `{"id", "event", "ts", ...fields}`; fields that do not
apply to an announcement (no playback, nothing published) are left out rather than null.

`Fanout` hands the same event objects to listeners inside the process (the HTTP server's
Server-Sent Events), each through a bounded buffer of its own.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..synthesis.plan import Segment

_LOGGER = logging.getLogger(__name__)


def _optional() -> Any:
    return field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Event:
    id: str
    device_id: str | None = _optional()
    """The device that says it (outcomes.py stamps it: a group's members share the ids)."""
    kind: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "event": self.kind, "ts": round(time.time(), 3)}
        for f in dataclasses.fields(self)[1:]:
            value = getattr(self, f.name)
            if value is not None or not f.metadata.get("optional"):
                data[f.name] = value
        return data


@dataclass(frozen=True)
class Queued(Event):
    kind: ClassVar[str] = "queued"
    priority: str = "normal"
    queue: int = 0
    """Requests waiting, this one included."""
    group: str | None = _optional()
    """The group it was sent to (`<group_prefix>/group/<name>/say`)."""
    play_at: int | None = _optional()
    """The start instant it asks for (Unix ms)."""


@dataclass(frozen=True)
class Started(Event):
    kind: ClassVar[str] = "started"


@dataclass(frozen=True)
class Finished(Event):
    """An announcement spoken (played and/or published) to its end."""

    kind: ClassVar[str] = "finished"
    cached: bool = False
    synth_ms: float = 0.0
    """Inference time spent on it (0 when cached)."""
    first_audio_ms: float | None = None
    """From receipt to the first sound on the device or the first audio payload published."""
    duration_ms: int = 0
    voice: str = ""
    underruns: int | None = _optional()
    """Played: times the voice was late and silence bridged the gap."""
    underrun_ms: float | None = _optional()
    audio_parts: int | None = _optional()
    """Published: audio payloads sent."""
    audio_complete: bool | None = _optional()
    """Published: False when a payload was dropped (the broker out of reach and the offline
    buffer full): the audio on MQTT has a gap."""
    fallback: str | None = _optional()
    """Why it was published instead of played (audio.fallback_to_publish)."""
    play_at: int | None = _optional()
    """The start instant it asked for (Unix ms)."""
    late_ms: float | None = _optional()
    """With a start instant, played: how much later than it the first sample sounded (0: on
    time, by this device's clock)."""
    segments: tuple[Segment, ...] = ()
    """Each language part spoken, in order (the voice that actually spoke it, after any
    fallback): {"language", "voice", "chars"} each."""

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "segments": [s.to_json() for s in self.segments]}


@dataclass(frozen=True)
class Failed(Event):
    kind: ClassVar[str] = "failed"
    error: str = ""
    late_ms: float | None = _optional()
    """Skipped for being late (groups_late: skip): by how much."""


@dataclass(frozen=True)
class Rejected(Event):
    kind: ClassVar[str] = "rejected"
    error: str = ""


@dataclass(frozen=True)
class Overloaded(Event):
    """QoS 0 requests refused while too much waited for the broker, reported in aggregate
    (at most one a second): MQTT has no flow control for QoS 0, and an event per refused
    request would add to the very backlog that made the daemon refuse it."""

    kind: ClassVar[str] = "overloaded"
    refused: int = 0
    error: str = ""


@dataclass(frozen=True)
class ControlDone(Event):
    """A control request carried out; `affected` lists the announcements it ended."""

    kind: ClassVar[str] = "finished"
    action: str = ""
    affected: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "affected": list(self.affected)}


class Listener:
    """One listener's bounded buffer of the daemon's events (see `Fanout`). Thread-safe."""

    def __init__(self, fanout: Fanout, maxlen: int, wake: Callable[[], object]) -> None:
        self._fanout = fanout
        self._maxlen = maxlen
        self._wake = wake
        self._lock = threading.Lock()
        self._events: deque[Event] = deque()
        self.overflowed = False
        """Its buffer filled up: it was cut off and gets nothing more (`take` still drains
        what it holds). Its reader is too slow; it should say so and reconnect."""

    def offer(self, event: Event) -> None:
        """From the daemon's threads; never blocks, never raises."""
        with self._lock:
            if self.overflowed:
                return
            if len(self._events) >= self._maxlen:
                self.overflowed = True
            else:
                self._events.append(event)
        try:
            self._wake()
        except Exception:  # a listener's problem must never reach the daemon
            _LOGGER.exception("Waking an event listener failed")

    def take(self) -> list[Event]:
        """Everything buffered, oldest first (empty: nothing new)."""
        with self._lock:
            events = list(self._events)
            self._events.clear()
            return events

    def close(self) -> None:
        self._fanout.remove(self)


class Fanout:
    """The daemon's events to every listener (the MQTT `<prefix>/event` topic aside), each with
    a bounded buffer of its own: a slow listener never blocks the daemon nor delays the others.
    When one's buffer is full it is cut off (`Listener.overflowed`) rather than silently losing
    events from the middle of its stream."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def listen(self, wake: Callable[[], object], maxlen: int = 256) -> Listener:
        """A new listener; `wake()` is called (from a daemon thread, must not block) after each
        event is offered to it. Close it when done."""
        listener = Listener(self, maxlen, wake)
        with self._lock:
            self._listeners.append(listener)
        return listener

    def remove(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def __len__(self) -> int:
        with self._lock:
            return len(self._listeners)

    def publish(self, event: Event) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.offer(event)
