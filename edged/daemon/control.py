"""What a control request does (`stop`, `skip`, `clear`, `pause`, `resume`) to the announcements
waiting in the queue and to the one being spoken. The daemon (core.py) parses it, answers it and
publishes its outcome."""

from __future__ import annotations

from collections.abc import Callable

from .job import Job
from .jobqueue import JobQueue

Interrupt = Callable[[Callable[[Job], bool], str], list[str]]
"""Stop the job being spoken if it matches, with a reason: the ids stopped (Daemon._interrupt)."""


def carry_out(action: str, reason: str, queue: JobQueue[Job], fail: Callable[[Job, str], None],
              interrupt: Interrupt) -> list[str]:
    """Do `action`; the ids of the announcements it cleared (`fail`ed with why) or cut short."""
    affected: list[str] = []
    if action in ("clear", "stop"):
        for job in queue.drain():
            fail(job, f"cleared: {reason}")
            affected.append(job.request.id)
    if action in ("skip", "stop"):
        affected += interrupt(lambda job: True, f"skipped: {reason}")
    if action == "pause":
        queue.pause()
    elif action == "resume":
        queue.resume()
    return affected
