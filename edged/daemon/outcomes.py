"""What the daemon says about its requests: every event (to `<prefix>/event` and to the in-process
listeners), acknowledgements, the one final event of each accepted request (remembered in the
done-log before it is acknowledged), refusal counts, and the retained state.

    daemon (paho thread, HTTP, announcer) ──► Outcomes ──► MQTT <p>/event, <p>/state (latest value)
                                                       └─► fanout: HTTP's Server-Sent Events
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..house import Reply
from ..mqtt import MqttLink, Ticket
from .device_state import Recent
from .donelog import DoneLog
from .events import Event, Failed, Fanout, Finished, Rejected
from .policy import Problem
from .refusals import Refusals
from .state import State

_LOGGER = logging.getLogger(__name__)

@dataclass(frozen=True)
class SayOutcome:
    """What became of an announcement handed to `Daemon.say` (the HTTP twin of MQTT `say`)."""

    id: str
    outcome: Literal["queued", "duplicate", "rejected"]
    """duplicate: its id was already handled or is being handled; it is not spoken twice."""
    error: str = ""
    problem: Problem | Literal[""] = ""
    """Why it was rejected; unavailable: the daemon is stopping or over its memory budget."""


class Outcomes:
    """Thread-safe."""

    def __init__(self, link: MqttLink, done: DoneLog, recent: Recent,
                 status: Callable[[str], None] | None, device_id: str | None = None,
                 on_final: Callable[[], None] | None = None) -> None:
        """`status`: where a one-line status goes on every change (systemd's STATUS=);
        `on_final`: called after each final event (the state's cache figures go stale)."""
        self._link = link
        self._device_id = device_id
        """Stamped on every event: a group's members answer the same ids."""
        self._done = done
        self._recent = recent
        self._status = status
        self._on_final = on_final
        self.fanout = Fanout()  # every event, to in-process listeners (HTTP's Server-Sent Events)
        self.refused = Refusals(self.publish, lambda: link.outgoing)

    def publish(self, event: Event, reply: Reply | None = None) -> dict[str, Any]:
        """To `<prefix>/event`, the request's reply topic if any, and the in-process listeners."""
        if self._device_id is not None:
            event = dataclasses.replace(event, device_id=self._device_id)
        data = event.to_json()
        self._send(data, reply)
        self.fanout.publish(event)
        return data

    def _send(self, data: dict[str, Any], reply: Reply | None) -> None:
        self._link.publish_json(self._link.topics.event, data)
        if reply is not None:
            self._link.publish_json(reply.events, data, correlation=reply.correlation)

    def repeat(self, request_id: str, outcome: dict[str, Any], reply: Reply | None) -> None:
        """A request already finished, asked for again: its final event once more, marked
        `repeat` (same kind and `ts`), so a client that missed it learns how it ended."""
        data = {"id": request_id, "event": outcome.get("event", "finished"),
                "ts": outcome.get("ts", round(time.time(), 3)), "device_id": self._device_id,
                "repeat": True, **{k: v for k, v in outcome.items() if k == "error"}}
        self._send(data, reply)

    def final(self, done_key: str, text: str, event: Finished | Failed,
              reply: Reply | None = None) -> None:
        """The one final event of an accepted request, logged, then remembered (not yet
        acknowledged: the caller releases the request, then acknowledges it)."""
        data = self.publish(event, reply)
        if isinstance(event, Finished):
            _LOGGER.info("Finished request %s (%s, %d ms of audio, first audio after %s ms)",
                         event.id, "cached" if event.cached else "synthesized",
                         event.duration_ms, event.first_audio_ms)
        else:
            _LOGGER.info("Request %s failed: %s", event.id, event.error)
        self._recent.record(text, event)
        brief: dict[str, Any] = {"event": event.kind, "ts": data["ts"]}
        if isinstance(event, Failed):
            brief["error"] = event.error[:200]
        self._done.add(done_key, brief)
        if self._on_final is not None:
            self._on_final()

    def reject(self, request_id: str, error: str, ticket: Ticket | None, problem: Problem,
               reply: Reply | None = None) -> None:
        _LOGGER.warning("Rejected request %s: %s", request_id, error)
        self.refused.count(problem)
        self.publish(Rejected(request_id, error=error), reply)
        self.ack(ticket)

    def ack(self, ticket: Ticket | None) -> None:
        if ticket is not None:  # None: from HTTP, answered in its response
            self._link.ack(ticket)

    def publish_state(self, state: State) -> None:
        """Retained, as a latest value: a newer state replaces one still waiting to go out."""
        self._link.publish_json(self._link.topics.state, state.to_json(), retain=True,
                                latest=True)
        if self._status is not None:
            self._status(state.status_line(self._link.connected.is_set()))
