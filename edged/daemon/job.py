"""An accepted announcement on its way through the daemon: admission makes it, the queue holds
it, the announcer speaks it, and the quiet-hours keeper may hold or expire it."""

from __future__ import annotations

from dataclasses import dataclass

from ..house import Instant, Reply
from ..mqtt import Ticket
from .requests import Request


@dataclass(eq=False)
class Job:
    """An accepted request on its way through the daemon."""

    request: Request
    ticket: Ticket | None
    """None: from HTTP (nothing to acknowledge)."""
    done_key: str
    """What the done-log remembers: the request id, or for id-less requests packet id + payload hash."""
    output: str
    ttl_s: float
    received: float
    abort: str | None = None
    """Why to stop early (set from other threads); checked between chunks."""
    instant: Instant | None = None
    """When its first sample should sound (play_at / start_in_ms); None: when ready."""
    reply: Reply | None = None
    """Where its events and audio go besides the device's own topics (reply_to)."""
    group: str | None = None

    @property
    def plays(self) -> bool:
        return self.output in ("play", "both")

    @property
    def publishes(self) -> bool:
        return self.output in ("publish", "both")
