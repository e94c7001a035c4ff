"""Job.wait: how the announcer waits for a job's plan (daemon/announcer.py, `_plan`): its result,
None once the job is stopped (a critical request cut in), an error past the limit. The waits
end by the job's own events, never by a clock, except the limit set to 0."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from edged.daemon.job import Job
from edged.daemon.requests import Request


def _job() -> Job:
    return Job(Request(text="The garage door is open."), None, "k", "publish", 60.0, 0.0)


def test_the_plans_result_and_its_error_come_back() -> None:
    done: Future[str] = Future()
    done.set_result("planned")
    assert _job().wait(done, lambda: None, 5.0, 60.0) == "planned"
    failed: Future[str] = Future()
    failed.set_exception(ValueError("no such voice"))
    with pytest.raises(ValueError, match="no such voice"):
        _job().wait(failed, lambda: None, 5.0, 60.0)


def test_a_stopped_job_stops_waiting_and_the_plan_goes_on() -> None:
    job, planning = _job(), Future[str]()
    waited: list[str | None] = []
    waiter = threading.Thread(target=lambda: waited.append(job.wait(planning, lambda: None,
                                                                    5.0, 3600.0)))
    waiter.start()
    assert job.stop("interrupted by critical request alarm")
    waiter.join(60)
    assert waited == [None] and not planning.done()
    planning.set_result("planned")  # later: nobody waits for it, nothing breaks


def test_a_job_stopped_after_its_plan_was_made_is_still_stopped() -> None:
    job, done = _job(), Future[str]()
    done.set_result("planned")
    job.stop("skipped")
    assert job.wait(done, lambda: None, 5.0, 60.0) is None


def test_past_its_limit_the_wait_fails() -> None:
    with pytest.raises(TimeoutError):
        _job().wait(Future(), lambda: None, 5.0, 0.0)
