"""A request's way into the queue (`Admission.admit`): parsed, then where its answers go
(reply_to; the synthesis pool requires one), whether it was handled already (the done-log, or
being handled now), what the request policy makes of it (policy.py: the device's voice, the
memory budget, ...), then its start instant and quiet hours. The outcome is a `Job` to queue, a
`Refusal`, or a `Duplicate`; the daemon publishes and acks.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..config import Config
from ..house import Reply, Schedule, check_reply_topic
from ..house.instants import too_far_ahead
from ..house.reply import MAX_CORRELATION_BYTES
from ..mqtt import Origin, Ticket
from .donelog import DoneLog
from .job import Job
from .policy import Problem, Refused, RequestPolicy
from .requests import Request, RequestError, Rules, new_id, parse_request


@dataclass(frozen=True)
class Refusal:
    request_id: str
    error: str
    problem: Problem
    reply: Reply | None


@dataclass(frozen=True)
class Duplicate:
    """Its id was handled already (`outcome`: how it ended) or is being handled now."""

    request_id: str
    outcome: dict[str, object] | None
    reply: Reply | None


class Admission:
    """Thread-safe (the done-log and the memory guard are)."""

    def __init__(self, config: Config, rules: Rules, policy: RequestPolicy, done: DoneLog,
                 schedule: Schedule) -> None:
        self._config = config
        self.rules = rules
        self._policy = policy
        self._done = done
        self._schedule = schedule

    def admit(self, payload: bytes, ticket: Ticket | None, received: float,
              origin: Origin | None, active: Callable[[str], bool]) -> Job | Refusal | Duplicate:
        """`active(id)`: is a request with this id queued or being spoken now?"""
        try:
            request = parse_request(payload, self.rules)
        except RequestError as err:
            return Refusal(err.request_id or new_id(), str(err),
                           "too_large" if err.too_large else "invalid",
                           origin_reply(origin, self.rules.reply_prefix))
        reply, problem = reply_for(request, origin, self.rules.reply_prefix)
        if problem:
            return Refusal(request.id, problem, "invalid", origin_reply(origin, self.rules.reply_prefix))
        # Without an id, an MQTT redelivery is recognised by its packet id and payload.
        done_key = request.id if request.id_given or ticket is None else (
            f"~{ticket.mid}:{hashlib.sha256(payload).hexdigest()[:16]}")
        if done_key in self._done and (request.id_given or (ticket is not None and ticket.dup)):
            return Duplicate(request.id, self._done.outcome(done_key), reply)
        if request.id_given and active(request.id):
            return Duplicate(request.id, None, reply)
        try:
            request = self._policy.admit(request)
        except Refused as refused:
            return Refusal(request.id, str(refused), refused.problem, reply)
        problem = timing_problem(request, time.time()) or quiet_problem(self._schedule, request)
        if problem:
            return Refusal(request.id, problem, "invalid", reply)
        ttl = request.ttl_s if request.ttl_s is not None else self._config.limits.task_timeout_s
        return Job(request, ticket, done_key, request.output or self._config.output, ttl, received,
                   instant=request.instant, reply=reply, group=origin.group if origin else None)


def origin_reply(origin: Origin | None, prefix: str) -> Reply | None:
    """The MQTT 5 response topic of a request that could not be parsed, when it is usable:
    its rejection goes there too."""
    if origin is None or origin.response_topic is None:
        return None
    if check_reply_topic(origin.response_topic, prefix) is not None:
        return None
    correlation = origin.correlation
    if correlation is not None and len(correlation) > MAX_CORRELATION_BYTES:
        correlation = None
    return Reply(origin.response_topic, correlation)


def reply_for(request: Request, origin: Origin | None,
              prefix: str) -> tuple[Reply | None, str | None]:
    """(where the answers go, None) or (None, why the request is refused)."""
    correlation = origin.correlation if origin is not None else None
    if correlation is not None and len(correlation) > MAX_CORRELATION_BYTES:
        return None, (f"the MQTT 5 correlation data is {len(correlation)} bytes; the limit is "
                      f"{MAX_CORRELATION_BYTES}")
    topic = request.reply_to
    if topic is None and origin is not None and origin.response_topic is not None:
        problem = check_reply_topic(origin.response_topic, prefix)
        if problem:
            return None, f"MQTT 5 response topic: {problem}"
        topic = origin.response_topic
    if topic is None:
        if origin is not None and origin.kind == "pool":
            return None, ("reply_to is missing: a request to the synthesis pool needs a topic "
                          "for its answer (reply_to, or the MQTT 5 Response Topic)")
        return None, None
    return Reply(topic, correlation), None


def timing_problem(request: Request, now_wall: float) -> str | None:
    instant = request.instant
    return None if instant is None else too_far_ahead(instant, now_wall)


def quiet_problem(schedule: Schedule, request: Request) -> str | None:
    """Quiet hours with `quiet_action: drop` refuse what they would otherwise hold."""
    if schedule.config.quiet_action != "drop":
        return None
    quiet = schedule.quiet()
    if quiet is None or not quiet.holds(request.priority):
        return None
    return (f"quiet hours until {quiet.until}: {request.priority} announcements are dropped "
            f"(schedule.quiet_action: drop; {quiet.below} and above are spoken)")
