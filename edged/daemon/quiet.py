"""Quiet hours as the announcer thread lives them: what may be taken from the queue now, what
the hours held and how long it waited, and the `schedule` part of `<p>/state`.

    max_rank, changed = keeper.watch()      each turn of the announcer loop (changed: publish
                                            the state: hours began or ended, volume changed)
    queue.get(timeout, max_rank)            worse ranks stay in the queue
    keeper.expired(queue, max_rank)         held announcements whose own ttl_s ran out
    keeper.waited(job, now)                 a held announcement's default timeout counts from
                                            the end of the hours, not from its arrival
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..house.schedule import Schedule
from .device_state import DeviceSettings
from .jobqueue import JobQueue
from .priorities import PRIORITIES

if TYPE_CHECKING:
    from .job import Job


class QuietKeeper:
    """Used from the announcer thread (`watch`, `expired`, `waited`) and any thread (`state`)."""

    def __init__(self, schedule: Schedule, settings: DeviceSettings) -> None:
        self.schedule = schedule
        self._settings = settings
        self._released = (0.0, len(PRIORITIES))
        """When quiet hours last ended (monotonic), and the worst rank they let through."""
        self._seen: dict[str, Any] = {}

    def watch(self) -> tuple[int | None, bool]:
        """(the worst rank that may be spoken now, whether the schedule's state changed)."""
        max_rank = self.schedule.eligible_rank()
        now = self.schedule.state(self._settings.volume, 0)
        del now["held"]
        if now == self._seen:
            return max_rank, False
        if self._seen.get("quiet") and not now["quiet"]:  # the hours ended: held ones go now
            worst_let_through = len(PRIORITIES) - 1 - len(self._seen.get("holding") or [])
            self._released = (time.monotonic(), worst_let_through)
        self._seen = now
        return max_rank, True

    def waited(self, job: Job, now: float) -> float:
        """How long `job` has waited, for its timeout: an announcement the hours held, without
        a ttl_s of its own, counts from when they ended (limits.task_timeout_s is about a
        queue that moves, not about a night)."""
        released_at, worst = self._released
        if job.request.ttl_s is None and job.request.rank > worst:
            return now - max(job.received, released_at)
        return now - job.received

    def expiry(self, job: Job) -> str:
        """Why `job` is too old to be spoken now ("": it is not): it waited longer than its
        ttl_s (held time aside, see `waited`), or its start instant passed longer ago."""
        waited = self.waited(job, time.monotonic())
        late = time.time() - job.instant.wall_s if job.instant and job.plays else 0.0
        if waited <= job.ttl_s and late <= job.ttl_s:
            return ""
        why = (f"its start instant passed {late:.1f} s ago" if late > job.ttl_s
               else f"waited {waited:.1f} s in the queue")
        return f"expired: {why}; its ttl_s is {job.ttl_s:g} s"

    def expired(self, queue: JobQueue[Job], max_rank: int | None) -> list[Job]:
        """Remove and return the held announcements whose own ttl_s ran out."""
        if max_rank is None:
            return []
        now = time.monotonic()
        return queue.remove_if(lambda j: j.request.rank > max_rank
                               and j.request.ttl_s is not None and now - j.received > j.ttl_s)

    def state(self, queue: JobQueue[Job]) -> dict[str, Any]:
        max_rank = self.schedule.eligible_rank()
        held = 0 if max_rank is None else queue.count_worse(max_rank)
        return self.schedule.state(self._settings.volume, held)
