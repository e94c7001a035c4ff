"""Work of one stream on spare workers (voice/lanes.py and the scheduler's jobs): results in
order, errors where they are taken, nothing waits for a job nobody runs, a critical stream still
gets the next free worker, and a closed stream's jobs are not run.

Jobs here are plain functions blocking on events: what is under test is who runs what and when;
a real voice's windows go through the same path in test_prepared_voice.py (audio equal to the
sequential decode) and in every daemon test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from edged.audio import Audio
from edged.synthesis import Scheduler
from edged.voice.lanes import Ahead, Claimable, LaneJob, Lanes, SpareThreads

_TIMEOUT_S = 10.0


def _chunk(value: int) -> Audio:
    return Audio(np.full(4, value, dtype=np.int16), 16000)


class _Lanes:
    """Lanes whose offered jobs a test runs by hand (on its own thread when it wants)."""

    width = 2
    pieces_at_once = False

    def __init__(self) -> None:
        self.offered: list[Claimable] = []

    def offer(self, job: Claimable) -> None:
        self.offered.append(job)


def _record(log: list[str], name: str, value: int) -> Callable[[], int]:
    def run() -> int:
        log.append(f"{name}@{threading.current_thread().name}")
        return value
    return run


def test_without_lanes_every_job_runs_inline_in_order() -> None:
    """Outside a scheduler (say -o, tests) jobs run on the caller's thread, in push order."""
    log: list[str] = []
    ahead: Ahead[int] = Ahead(None)
    for i in range(3):
        ahead.push(_record(log, f"j{i}", i))
    assert [ahead.pop() for _ in range(3)] == [0, 1, 2]
    me = threading.current_thread().name
    assert log == [f"j0@{me}", f"j1@{me}", f"j2@{me}"]


def test_the_head_is_not_offered_and_a_job_nobody_started_runs_inline() -> None:
    """What the listener needs next is run by the stream itself; offered jobs no worker took are
    run inline when their turn comes (nothing waits for a job that is not running)."""
    lanes, log = _Lanes(), []
    ahead: Ahead[int] = Ahead(lanes)
    for i in range(3):
        ahead.push(_record(log, f"j{i}", i))
    assert len(lanes.offered) == 2  # j1 and j2, not the head j0
    assert [ahead.pop() for _ in range(3)] == [0, 1, 2]
    assert len(log) == 3 and not any(job.claim() for job in lanes.offered)


def test_while_the_head_runs_elsewhere_the_stream_runs_the_next_job() -> None:
    """Both cores work: the head taken by another worker, the stream runs the oldest job nobody
    started, then takes the head's result in order."""
    lanes, log = _Lanes(), []
    started, release = threading.Event(), threading.Event()

    def slow() -> int:
        started.set()
        release.wait(_TIMEOUT_S)
        log.append(f"j1@{threading.current_thread().name}")
        return 1

    ahead: Ahead[int] = Ahead(lanes)
    ahead.push(_record(log, "j0", 0))
    ahead.push(slow)
    ahead.push(lambda: (release.set(), log.append("j2@stream"), 2)[2])  # type: ignore[func-returns-value]
    assert ahead.pop() == 0
    helper = threading.Thread(target=lambda: lanes.offered[0].claim() and lanes.offered[0].run(),
                              name="helper")
    helper.start()
    assert started.wait(_TIMEOUT_S)
    assert ahead.pop() == 1  # ran j2 meanwhile (which released j1), then took j1's result
    helper.join(_TIMEOUT_S)
    assert log[1:] == ["j2@stream", "j1@helper"]
    assert ahead.pop() == 2


def test_a_job_error_is_raised_where_its_result_is_taken() -> None:
    """An inference error in a job reaches the stream at that job's turn, not before."""
    ahead: Ahead[int] = Ahead(None)
    ahead.push(lambda: 1)
    ahead.push(lambda: 1 // 0)
    assert ahead.pop() == 1
    with pytest.raises(ZeroDivisionError):
        ahead.pop()


def test_a_job_runs_once_whoever_claims_it() -> None:
    """A worker and the stream racing for a job: one claims it, the other gets its result."""
    runs: list[int] = []
    job = LaneJob(lambda: runs.append(1) or 7)
    assert job.claim() and not job.claim()
    job.run()
    assert job.result() == 7 and runs == [1]


def test_scheduler_workers_take_a_streams_jobs_and_it_keeps_order() -> None:
    """With two workers one announcement uses both: the first window waits until another worker
    has started one of the stream's later windows (only an idle worker taking an offered job
    can), and the chunks come in order."""
    scheduler = Scheduler(2, {"a": 1})
    scheduler.start()
    try:
        helped = threading.Event()
        threads: list[str] = []

        def window(i: int) -> int:
            threads.append(threading.current_thread().name)
            if i == 0:
                helped.wait(_TIMEOUT_S)
            else:
                helped.set()
            return i

        def steps(lanes: Lanes | None) -> Iterator[Audio]:
            ahead: Ahead[int] = Ahead(lanes)
            for i in range(6):
                ahead.push(lambda i=i: window(i))  # type: ignore[misc]
            while ahead:
                yield _chunk(ahead.pop())

        chunks = [int(c.samples[0]) for c in scheduler.submit(steps, rank=2, source="a")]
        assert chunks == [0, 1, 2, 3, 4, 5]
        assert helped.is_set() and len(set(threads)) == 2, threads
    finally:
        scheduler.stop()


def test_a_critical_stream_gets_the_next_free_worker_before_queued_jobs() -> None:
    """A normal announcement has jobs queued for the other worker; a critical one submitted now
    is taken up by the next worker that finishes its window, before those jobs."""
    scheduler = Scheduler(2, {"a": 1, "b": 1})
    scheduler.start()
    try:
        order: list[str] = []
        busy, release = threading.Barrier(3, timeout=_TIMEOUT_S), threading.Event()
        critical_ran, stuck = threading.Event(), []

        def blocking(name: str) -> Callable[[], int]:
            def run() -> int:
                order.append(name)
                if name in ("n1", "n2"):
                    busy.wait()  # both workers inside a window of the normal stream
                    release.wait(_TIMEOUT_S)
                elif name != "n0" and not critical_ran.wait(_TIMEOUT_S):
                    stuck.append(name)  # both workers took normal jobs: the critical waited
                return 0
            return run

        def normal(lanes: Lanes | None) -> Iterator[Audio]:
            ahead: Ahead[int] = Ahead(lanes)
            for i in range(6):
                ahead.push(blocking(f"n{i}"))
            while ahead:
                yield _chunk(ahead.pop())

        def critical() -> Iterator[Audio]:
            order.append("critical")
            critical_ran.set()
            yield _chunk(9)

        slow = scheduler.submit(normal, rank=2, source="a")
        next(slow)  # n0 done: the step now runs n2 while a worker runs n1 (or the reverse)
        busy.wait()
        urgent = scheduler.submit(lambda _lanes: critical(), rank=0, source="b")
        release.set()
        assert [int(c.samples[0]) for c in urgent] == [9]
        assert len(list(slow)) == 5
        assert stuck == [] and order.index("critical") < order.index("n4"), order
    finally:
        scheduler.stop()


def test_jobs_of_a_closed_stream_are_not_run() -> None:
    """A skipped announcement's queued windows are dropped with it: no worker decodes them."""
    scheduler = Scheduler(2, {"a": 1, "b": 1})
    scheduler.start()
    try:
        ran: list[int] = []
        inside, in_head, release, closed = (threading.Event() for _ in range(4))

        def occupy() -> Iterator[Audio]:
            inside.set()
            release.wait(_TIMEOUT_S)
            yield _chunk(0)

        def head() -> int:
            in_head.set()
            closed.wait(_TIMEOUT_S)
            return 0

        def many(lanes: Lanes | None) -> Iterator[Audio]:
            ahead: Ahead[int] = Ahead(lanes)
            ahead.push(head)
            for i in range(1, 8):
                ahead.push(lambda i=i: ran.append(i) or i)  # type: ignore[misc]
            yield _chunk(ahead.pop())

        blocker = scheduler.submit(lambda _lanes: occupy(), rank=2, source="b")
        assert inside.wait(_TIMEOUT_S)  # one worker is held: the other steps `many`
        stream = scheduler.submit(many, rank=3, source="a")
        assert in_head.wait(_TIMEOUT_S)  # both workers busy, seven jobs offered
        stream.close()
        closed.set()
        release.set()
        assert [int(c.samples[0]) for c in blocker] == [0]
        assert scheduler.open_streams() == {"a": 0, "b": 0}
        scheduler.stop()  # every worker done: nothing more can run
        assert ran == [], "a closed stream's jobs were run"
    finally:
        scheduler.stop()


def test_spare_threads_run_an_offered_job_while_the_stream_runs_its_head() -> None:
    """`edged say` to a file has no scheduler: SpareThreads' own thread takes what is offered,
    so the head (run by the stream) and the next job run at once. The head waits for the next
    job to start: run one after the other it would wait for nothing and time out."""
    started = threading.Event()
    with SpareThreads(2) as lanes:
        ahead: Ahead[tuple[bool, str]] = Ahead(lanes)
        ahead.push(lambda: (started.wait(_TIMEOUT_S), threading.current_thread().name))
        ahead.push(lambda: (started.set() or True, threading.current_thread().name))
        head, after = ahead.pop(), ahead.pop()
    assert head == (True, threading.current_thread().name)
    assert after[1].startswith("edged-lane")
