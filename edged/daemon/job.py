"""An accepted announcement on its way through the daemon: admission makes it, the queue holds
it, the announcer speaks it, and the quiet-hours keeper may hold or expire it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ..house import Instant, Reply
from ..mqtt import Ticket
from .requests import Request

T = TypeVar("T")


class Closable(Protocol):
    def close(self) -> None: ...


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
    """Why it stopped early (`stop`, from other threads); checked between chunks."""
    instant: Instant | None = None
    """When its first sample should sound (play_at / start_in_ms); None: when ready."""
    reply: Reply | None = None
    """Where its events and audio go besides the device's own topics (reply_to)."""
    group: str | None = None
    _stream: Closable | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _wake: threading.Event = field(default_factory=threading.Event, repr=False)

    def attach(self, stream: Closable) -> None:
        """The speech stream the announcer reads: closed at once when the job is stopped, now
        or already."""
        with self._lock:
            self._stream = stream
            stopped = self.abort is not None
        if stopped:
            stream.close()

    def stop(self, reason: str) -> bool:
        """Stop it with `reason` (False: it was stopped already). Its speech stream is closed
        too: an announcer waiting for audio that other work starves (a stream of lower rank
        than the network servers') is released at once, not when a chunk comes."""
        with self._lock:
            if self.abort is not None:
                return False
            self.abort = reason
            stream = self._stream
        self._wake.set()
        if stream is not None:
            stream.close()
        return True

    def wait(self, work: Future[T], beat: Callable[[], None], every_s: float,
             limit_s: float) -> T | None:
        """`work`'s result (or its exception), or None as soon as the job is stopped: `work`
        then goes on without it. `beat()` every `every_s` while waiting; TimeoutError after
        `limit_s`."""
        work.add_done_callback(lambda _done: self._wake.set())
        deadline = time.monotonic() + limit_s
        while not self._wake.wait(min(every_s, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"not done within {limit_s:.0f} s")
            beat()
        with self._lock:
            if self.abort is not None:
                return None
        return work.result()

    @property
    def opened(self) -> bool:
        """Its speech stream is open (its plan is made: nothing is left to load)."""
        with self._lock:
            return self._stream is not None

    @property
    def plays(self) -> bool:
        return self.output in ("play", "both")

    @property
    def publishes(self) -> bool:
        return self.output in ("publish", "both")
