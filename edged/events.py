"""The events edged publishes on `<prefix>/event`, typed: one class per kind, one JSON shape.

Every accepted announcement gets `queued`, `started`, then exactly one final event, `finished`
or `failed`; a request that is not accepted gets one `rejected`, except QoS 0 requests refused
under overload, which are counted in an `overloaded` event. A control request gets a
`finished` naming its action. The JSON is `{"id", "event", "ts", ...fields}`; fields that do not
apply to an announcement (no playback, nothing published) are left out rather than null.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar


def _optional() -> Any:
    return field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Event:
    id: str
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
    fallback: str | None = _optional()
    """Why it was published instead of played (audio.fallback_to_publish)."""


@dataclass(frozen=True)
class Failed(Event):
    kind: ClassVar[str] = "failed"
    error: str = ""


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
