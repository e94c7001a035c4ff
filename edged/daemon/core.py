"""The daemon: requests from MQTT, one announcer thread, events and audio back.

    paho network thread                       announcer thread (exactly one)
    on_say: parse -> check -> queue.put  ──►  job = queue.get()  (best priority first)
      "queued" (or "rejected" + ack)            "started" -> cache or scheduler -> outputs
    on_control: stop/skip/clear/pause/resume    "finished"/"failed" -> remember id -> ack
    say / control: the same from the HTTP server (no ticket: nothing to ack, outcome returned)
Every event goes to `<prefix>/event` and to the in-process listeners (outcomes.py).

The queue holds announcements waiting for the loudspeaker; their synthesis runs on the shared
synthesis scheduler (synthesis/scheduler.py) when their turn comes, at their priority.

A request is acknowledged to the broker only after its final event, so one the daemon had
not finished when it died is redelivered; finished ids are remembered on disk (DoneLog) so
a redelivery of something already spoken is acknowledged silently instead of spoken twice
(a client sending a finished id again gets its final event again, marked `repeat`).

In-flight window: at most `limits.queue` waiting requests plus the one being spoken, all
unacknowledged. The receive maximum asked of the broker is `limits.queue + 2` (one more than
it holds: a request beyond a full queue is answered "busy" at once rather than held back
silently); a synth daemon's is `limits.queue` (in the pool a request waits at the broker).

The house (house/): group and pool requests come through `on_say` with their `Origin`; quiet
hours hold announcements in the queue or drop them; a start instant is the player's. Load: no
outcome is ever dropped; too much waiting for the broker (mqtt/outbox.py) slows QoS 1 intake
and refuses QoS 0 requests (counted: `refused` in the state, an `overloaded` event).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from ..config import Config
from ..house import Reply, late_error
from ..mqtt import Origin, Ticket
from .admission import Duplicate, Refusal
from .announcer import Skipped
from .control import carry_out
from .events import ControlDone, Event, Failed, Finished, Queued, Started
from .job import Job
from .jobqueue import QueueFull
from .outcomes import SayOutcome
from .parts import Parts
from .policy import Problem, Refused
from .priorities import preempts
from .requests import RequestError, new_id, parse_control
from .state import ServerState, State

_LOGGER = logging.getLogger(__name__)
SHUTDOWN: Final = "shutdown"
"""Abort reason of the job cut short by SIGTERM: it gets no final event and no ack."""


class Daemon:
    """Requests in, announcements and events out. Made by `assembly.assemble`, which builds its
    parts and points the MQTT link at it; `start`, then `stop` from any thread."""

    def __init__(self, config: Config, parts: Parts) -> None:
        self.config = config
        self._admission = parts.admission
        self._queue = parts.queue
        self._quiet = parts.quiet
        self._announcer = parts.announcer
        self._out = parts.outcomes
        self._board = parts.board
        self.link = parts.link
        self._player = parts.player
        self.settings = parts.settings
        self.schedule = parts.schedule
        self._heartbeat = parts.heartbeat
        self._closing = parts.closing
        self.fanout = self._out.fanout
        self._lock = threading.Lock()
        self._held: dict[tuple[int, int], Job] = {}
        self._active_ids: set[str] = set()
        self._current: Job | None = None
        self._stopping = threading.Event()
        self._worker = threading.Thread(target=self._work, name="edged-announcer", daemon=True)

    @property
    def heartbeat(self) -> float:
        """When the announcer thread last showed it is alive (monotonic): the watchdog's."""
        return self._heartbeat.last

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._worker.start()
        self.link.start()

    def stop(self) -> None:
        """Finish the current announcement (up to limits.stop_timeout_s), leave the rest
        unacknowledged for redelivery, say offline, disconnect."""
        self._stopping.set()
        self._queue.close()
        with self._lock:
            current = self._current
        if current is not None and not current.opened:
            current.stop(SHUTDOWN)  # still waiting for its voice: nothing to finish
        self._worker.join(self.config.limits.stop_timeout_s)
        if self._worker.is_alive():
            with self._lock:
                current = self._current
            if current is not None:
                current.stop(SHUTDOWN)
            if self._player is not None:
                self._player.interrupt()
            self._worker.join(5.0)
        self.link.stop()
        for part in self._closing:
            with contextlib.suppress(Exception):
                part.close()

    # -- requests (paho network thread) ----------------------------------------------------

    def on_connected(self, session_present: bool) -> None:
        self._out.refused.report(every_s=0.0)
        self._publish_state()

    def on_say(self, payload: bytes, ticket: Ticket, origin: Origin | None = None) -> None:
        received = time.monotonic()
        if self._stopping.is_set():
            return  # not acknowledged: the broker keeps it for the next start
        with self._lock:
            if ticket.dup and (ticket.generation, ticket.mid) in self._held:
                return  # redelivered after a reconnect; the copy we hold will be acked
        if not self._overloaded(ticket):
            self._take(payload, ticket, received, origin)

    def say(self, payload: bytes) -> SayOutcome:
        """The HTTP twin of `on_say`, from any thread: the same parsing, queue, done-log and
        events; with no ticket there is nothing to acknowledge, and the outcome is returned."""
        if self._stopping.is_set():
            return SayOutcome(new_id(), "rejected", "the daemon is stopping", "unavailable")
        if busy := self._shed_network():
            return SayOutcome(new_id(), "rejected", busy, "busy")
        return self._take(payload, None, time.monotonic())

    def _take(self, payload: bytes, ticket: Ticket | None, received: float,
              origin: Origin | None = None) -> SayOutcome:
        result = self._admission.admit(payload, ticket, received, origin, self._is_active)
        if isinstance(result, Refusal):
            return self._reject(result.request_id, result.error, ticket, result.problem,
                                result.reply)
        if isinstance(result, Duplicate):
            _LOGGER.info("Request %s was delivered again; already handled, not spoken twice",
                         result.request_id)
            if result.outcome is not None and not (ticket is not None and ticket.dup):
                # A client asking again (not the broker redelivering): it may have missed it.
                self._out.repeat(result.request_id, result.outcome, result.reply)
            self._out.ack(ticket)
            return SayOutcome(result.request_id, "duplicate")
        return self._enqueue(result)

    def _is_active(self, request_id: str) -> bool:
        with self._lock:
            return request_id in self._active_ids

    def _enqueue(self, job: Job) -> SayOutcome:
        request = job.request
        try:
            displaced = self._queue.put(job, request.rank, on_admit=self._admit)
        except QueueFull:
            return self._reject(request.id, f"busy: {self._queue.maxsize} requests are already "
                                f"waiting (limits.queue); try again later", job.ticket, "busy",
                                job.reply)
        if displaced is not None:
            self._finish(displaced, Failed(displaced.request.id, error="dropped from the full "
                         f"queue to make room for {request.priority} request {request.id}"))
        self._interrupt(lambda current: preempts(request.priority, current.request.priority),
                        f"interrupted by {request.priority} request {request.id}")
        self._publish_state()
        return SayOutcome(request.id, "queued")

    def on_control(self, payload: bytes, ticket: Ticket) -> None:
        if self._overloaded(ticket):
            return
        with contextlib.suppress(RequestError):  # already rejected (published and acked)
            self._control(payload, ticket)

    def control(self, payload: bytes) -> ControlDone:
        """The HTTP twin of `on_control`; RequestError (also published as `rejected`), Refused
        (busy) while too much waits for the broker."""
        if busy := self._shed_network():
            raise Refused("busy", busy)
        return self._control(payload, None)

    def _shed_network(self) -> str | None:
        """Why a request from the network (HTTP) is refused while too much waits for the
        broker: its events would wait too, without bound (the broker down: 40,000 requests,
        40,001 messages waiting). Counted as `overloaded`; no `rejected` event, which would
        wait as well: the HTTP answer says it."""
        if not self.link.overloaded():
            return None
        self._out.refused.shed()
        return (f"busy: {self.link.outgoing} messages are waiting for the MQTT broker "
                "(mqtt.max_outgoing_messages); try again later")

    def _control(self, payload: bytes, ticket: Ticket | None) -> ControlDone:
        try:
            control = parse_control(payload)
        except RequestError as err:
            self._reject(err.request_id or new_id(), str(err), ticket,
                         "too_large" if err.too_large else "invalid")
            raise
        affected = carry_out(
            control.action, f"{control.action} by control request {control.id}", self._queue,
            lambda job, why: self._finish(job, Failed(job.request.id, error=why)),
            self._interrupt)
        done = ControlDone(control.id, action=control.action, affected=tuple(affected))
        self._out.publish(done)
        self._out.ack(ticket)
        self._publish_state()
        return done

    def _overloaded(self, ticket: Ticket) -> bool:
        """A QoS 0 message while too much waits for the broker: refused and counted (QoS 1
        intake is slowed by the link instead, which defers acknowledgements)."""
        if ticket.qos != 0 or not self.link.overloaded():
            return False
        self._out.refused.shed()
        return True

    def _admit(self, job: Job) -> None:
        # Runs under the queue lock, before the announcer thread can see the job.
        with self._lock:
            if job.ticket is not None:
                self._held[(job.ticket.generation, job.ticket.mid)] = job
            self._active_ids.add(job.request.id)
        # The queue's lock is an RLock: len() from here is fine.
        self._out.publish(Queued(job.request.id, priority=job.request.priority,
                                 queue=len(self._queue) + 1, group=job.group,
                                 play_at=job.instant.ms if job.instant else None), job.reply)

    def _interrupt(self, which: Callable[[Job], bool], reason: str) -> list[str]:
        with self._lock:
            job = self._current
            if job is None or not which(job) or not job.stop(reason):
                return []
        if self._player is not None:
            self._player.interrupt()
        return [job.request.id]

    # -- the announcer thread -------------------------------------------------------------

    def _work(self) -> None:
        while not self._stopping.is_set():
            self._heartbeat.beat()
            max_rank, changed = self._quiet.watch()
            if changed:  # quiet hours began or ended, or the time-of-day volume changed
                self._publish_state()
            job = self._queue.get(timeout=0.5, max_rank=self._quiet.schedule.eligible_rank)
            if job is None:
                self._out.refused.report()  # what was shed while busy, once idle
                for held in self._quiet.expired(self._queue, max_rank):  # by their own ttl_s
                    self._finish(held, Failed(held.request.id, error=self._quiet.expiry(held)))
                continue
            try:
                self._serve(job)
            except Exception:  # one announcement must never stop the announcer
                _LOGGER.exception("Unexpected error serving request %s", job.request.id)
                self._finish(job, Failed(job.request.id,
                                         error="internal error; see the daemon log"))

    def _serve(self, job: Job) -> None:
        if expired := self._quiet.expiry(job):
            self._finish(job, Failed(job.request.id, error=expired))
            return
        with self._lock:
            self._current = job
        self._out.publish(Started(job.request.id), job.reply)
        self._publish_state()
        try:
            finished = self._announcer.announce(job)
        except Skipped as skipped:
            self._finish(job, Failed(job.request.id, late_ms=round(1000 * skipped.late_s, 1),
                                     error=late_error(skipped.late_s, self.config.groups_late)))
            return
        except Exception as err:
            if job.abort != SHUTDOWN:
                _LOGGER.warning("Request %s failed: %s", job.request.id, err)
                self._finish(job, Failed(job.request.id, error=f"speaking failed: {err}"))
            return
        finally:
            with self._lock:
                self._current = None
            self._publish_state()
        if job.abort == SHUTDOWN:
            return  # left unacknowledged: the broker redelivers it after the restart
        if job.abort is not None or finished is None:  # None: stopped before its plan was made
            self._finish(job, Failed(job.request.id, error=job.abort or "stopped"))
        else:
            self._finish(job, finished)

    # -- outcomes, state ------------------------------------------------------------------

    def _finish(self, job: Job, event: Finished | Failed) -> None:
        """The one final event of an accepted request, then remember it, then acknowledge."""
        self._out.final(job.done_key, job.request.text, event, job.reply)
        with self._lock:
            if job.ticket is not None:
                self._held.pop((job.ticket.generation, job.ticket.mid), None)
            self._active_ids.discard(job.request.id)
        self._out.ack(job.ticket)
        self._publish_state()  # the last announcement's outcome (Home Assistant's sensors)

    def _reject(self, request_id: str, error: str, ticket: Ticket | None,
                problem: Problem = "invalid", reply: Reply | None = None) -> SayOutcome:
        self._out.reject(request_id, error, ticket, problem, reply)
        self._publish_state()  # `refused` changed (a latest value: cheap under a flood)
        return SayOutcome(request_id, "rejected", error, problem)

    def reload_refused(self, reason: str) -> None:
        """A SIGHUP's config was refused: `reload_error` in the state and STATUS= say why."""
        self._board.reload_refused(reason)
        self._publish_state()

    def publish_event(self, event: Event) -> None:
        """An event of another room (a refused setting) on `<p>/event`, stamped like ours."""
        self._out.publish(event)

    def report_server(self, name: str, server: ServerState) -> None:
        """Show a network server's address, or why it is off, in the state."""
        self._board.set_server(name, server)
        self._publish_state()

    def state(self) -> State:
        """What `<prefix>/state` says now."""
        with self._lock:
            speaking = self._current is not None
        return self._board.snapshot(speaking=speaking, queue=len(self._queue),
                                    paused=self._queue.paused,
                                    schedule=self._quiet.state(self._queue))

    def publish_state(self) -> None:
        """Publish `<p>/state` now (after a setting changed)."""
        self._out.publish_state(self.state())

    _publish_state = publish_state
