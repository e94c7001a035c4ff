"""The synthesis scheduler: workers make each stream's steps ahead of its consumer, bounded, best
priority first at every step, within per-source limits, and a dropped stream costs no waiting.

The steps here are plain generators standing in for a voice's (one step = one decoder window):
what is under test is the scheduling, and a real voice's timing would only blur it. Voices go
through the scheduler for real in test_voice.py and every daemon test.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edged.audio import Audio
from edged.synthesis import Busy, Scheduler, SchedulerStopped
from edged.voice.sizing import auto_workers

_TIMEOUT_S = 10.0


def _chunk(value: int) -> Audio:
    return Audio(np.full(4, value, dtype=np.int16), 16000)


@pytest.fixture
def scheduler() -> Iterator[Scheduler]:
    s = Scheduler(1, {"a": 2, "b": 1}, depth=3)
    s.start()
    yield s
    s.stop()


def test_chunks_come_in_order_and_a_failing_step_reaches_the_consumer(scheduler: Scheduler) -> None:
    """An inference error is raised where the audio is consumed, after what came before it."""
    def steps() -> Iterator[Audio]:
        yield from (_chunk(i) for i in range(5))
        raise ValueError("inference failed")

    got = []
    with pytest.raises(ValueError, match="inference failed"):
        for chunk in scheduler.submit(lambda _lanes: steps(), rank=2, source="a"):
            got.append(int(chunk.samples[0]))
    assert got == [0, 1, 2, 3, 4]


def test_workers_stay_at_most_depth_chunks_ahead(scheduler: Scheduler) -> None:
    """Synthesis runs ahead of playback, but only `depth` chunks: memory stays bounded."""
    made: list[int] = []
    room = threading.Condition()

    def steps() -> Iterator[Audio]:
        for i in range(20):
            with room:
                made.append(i)
                room.notify_all()
            yield _chunk(i)

    stream = scheduler.submit(lambda _lanes: steps(), rank=2, source="a")
    assert int(next(stream).samples[0]) == 0
    with room:  # the worker fills the buffer (3 ahead), then must wait for the consumer
        assert room.wait_for(lambda: len(made) >= 4, timeout=_TIMEOUT_S)
    # The one worker turns to a later, lower-ranked stream only when this one has no room
    # ahead: once that stream's step runs, the worker has passed the moment it would have
    # made item 5, and it did not.
    probed = threading.Event()

    def probe() -> Iterator[Audio]:
        probed.set()
        yield _chunk(-1)

    other = scheduler.submit(lambda _lanes: probe(), rank=3, source="b")
    assert probed.wait(_TIMEOUT_S)
    with room:
        assert len(made) == 1 + 3
    other.close()
    assert [int(c.samples[0]) for c in stream] == list(range(1, 20))


def test_closing_early_does_not_wait_for_the_step_being_made(scheduler: Scheduler) -> None:
    """A skipped announcement must not wait for the inference still running, and the stream is
    dropped at its next step: no more work is spent on it."""
    release, busy, dropped = threading.Event(), threading.Event(), threading.Event()
    went_on = threading.Event()

    def steps() -> Iterator[Audio]:
        try:
            yield _chunk(1)
            busy.set()
            release.wait(_TIMEOUT_S)  # a long inference
            yield _chunk(2)
            went_on.set()
            yield _chunk(3)
        except GeneratorExit:
            dropped.set()
            raise

    stream = scheduler.submit(lambda _lanes: steps(), rank=2, source="a")
    assert int(next(stream).samples[0]) == 1
    assert busy.wait(_TIMEOUT_S)
    closer = threading.Thread(target=stream.close)
    closer.start()
    closer.join(_TIMEOUT_S)  # returns although the step it interrupts is still blocked
    assert not closer.is_alive()
    release.set()
    assert dropped.wait(_TIMEOUT_S) and not went_on.is_set()
    assert scheduler.open_streams()["a"] == 0


def test_a_critical_stream_goes_first_at_the_next_step(scheduler: Scheduler) -> None:
    """With one worker busy on a normal announcement's window, a critical one submitted now is
    synthesized before that announcement's next window: it waits for one step at most."""
    log: list[str] = []
    in_step, release = threading.Event(), threading.Event()

    def normal() -> Iterator[Audio]:
        for i in range(3):
            log.append(f"normal{i}")
            if i == 0:
                in_step.set()
                release.wait(_TIMEOUT_S)
            yield _chunk(i)

    def critical() -> Iterator[Audio]:
        for i in range(2):
            log.append(f"critical{i}")
            yield _chunk(10 + i)

    slow = scheduler.submit(lambda _lanes: normal(), rank=2, source="a")
    assert in_step.wait(_TIMEOUT_S)
    urgent = scheduler.submit(lambda _lanes: critical(), rank=0, source="b")
    release.set()
    assert [int(c.samples[0]) for c in urgent] == [10, 11]
    assert [int(c.samples[0]) for c in slow] == [0, 1, 2]
    assert log == ["normal0", "critical0", "critical1", "normal1", "normal2"]


def test_until_a_critical_stream_has_its_first_chunk_no_worker_starts_other_work() -> None:
    """Two workers: one finishes a normal announcement's window while the other makes a critical
    alarm's first chunk. It does not start the announcement's next window beside the alarm (on
    a 2-core device that would take half the cores from the alarm's first sound); once the
    alarm's first chunk is out, it does."""
    two = Scheduler(2, {"a": 1, "b": 1}, depth=3)
    two.start()
    log: list[str] = []
    in_normal, release_normal = threading.Event(), threading.Event()
    in_critical, next_normal = threading.Event(), threading.Event()

    def normal() -> Iterator[Audio]:
        for i in range(3):
            log.append(f"normal{i}")
            if i == 0:
                in_normal.set()
                release_normal.wait(_TIMEOUT_S)
            if i == 1:
                next_normal.set()
            yield _chunk(i)

    def critical() -> Iterator[Audio]:
        in_critical.set()
        release_normal.set()  # the other worker's window ends while the alarm's first is made
        # Nothing else can signal "the other worker stayed idle": a bounded wait for the
        # announcement's next window to start beside this one (it starts at once without the rule).
        next_normal.wait(0.5)
        log.append("critical0")
        yield _chunk(10)
        yield _chunk(11)

    try:
        slow = two.submit(lambda _lanes: normal(), rank=2, source="a")
        assert in_normal.wait(_TIMEOUT_S)
        urgent = two.submit(lambda _lanes: critical(), rank=0, source="b")
        assert [int(c.samples[0]) for c in urgent] == [10, 11]
        assert [int(c.samples[0]) for c in slow] == [0, 1, 2]
    finally:
        two.stop()
    assert log.index("critical0") < log.index("normal1"), log


def test_each_source_is_bounded_on_its_own(scheduler: Scheduler) -> None:
    """A source at its limit gets Busy at once; another source is not affected; a stream that
    ends frees its slot."""
    first = scheduler.submit(lambda _lanes: iter([_chunk(1)]), rank=2, source="b")
    with pytest.raises(Busy, match="b already has 1 synthesis stream"):
        scheduler.submit(lambda _lanes: iter([_chunk(2)]), rank=2, source="b")
    other = scheduler.submit(lambda _lanes: iter([_chunk(3)]), rank=2, source="a")
    assert [int(c.samples[0]) for c in first] == [1]
    again = scheduler.submit(lambda _lanes: iter([_chunk(4)]), rank=2, source="b")
    assert [int(c.samples[0]) for c in again] == [4]
    assert [int(c.samples[0]) for c in other] == [3]


def test_stopping_ends_every_open_stream_for_its_consumer() -> None:
    """At shutdown a consumer waiting for audio is told, not left hanging."""
    scheduler = Scheduler(1, {"a": 1})
    release = threading.Event()

    def steps() -> Iterator[Audio]:
        yield _chunk(1)
        release.wait(_TIMEOUT_S)
        yield _chunk(2)

    scheduler.start()
    stream = scheduler.submit(lambda _lanes: steps(), rank=2, source="a")
    assert int(next(stream).samples[0]) == 1
    stopper = threading.Thread(target=scheduler.stop)
    stopper.start()
    with pytest.raises(SchedulerStopped):
        list(stream)
    release.set()
    stopper.join(_TIMEOUT_S)
    with pytest.raises(SchedulerStopped):
        scheduler.submit(lambda _lanes: iter([]), rank=2, source="a")


@pytest.mark.parametrize(("cores", "threads", "memory_mb", "workers"), [
    (2, 2, 400, 1),    # this machine: one inference uses both cores
    (4, 2, 400, 2),    # a Pi 4
    (4, 1, 400, 2),    # one thread each, but the memory budget allows two
    (4, 2, 150, 1),    # a Pi Zero 2 W budget: one
    (1, 2, 4000, 1),   # never none
])
def test_workers_follow_cores_and_memory(cores: int, threads: int, memory_mb: int,
                                         workers: int) -> None:
    """One worker per `voice.threads` cores, at most one per 200 MB of the budget, at least one."""
    assert auto_workers(cores, threads, memory_mb) == workers


@pytest.mark.parametrize(("options", "most"), [
    ({}, 2),                                                  # 400 MB: two lanes
    ({"limits": {"memory_mb": 800}}, 4),                      # a Pi 4 given 800 MB: four
    ({"limits": {"memory_mb": 300}}, 1),                      # one window at a time
    ({"voice": {"parallel_windows": 1}}, 1),                  # the earlier arrangement
    ({"limits": {"memory_mb": 800, "synthesis_workers": 3}}, 3),
])
def test_window_lanes_follow_cores_memory_and_settings(tmp_path: Path, options: dict[str, Any],
                                                       most: int) -> None:
    """Windows decoded at once: the usable cores, at most voice.parallel_windows, one per 200 MB
    of the budget and the workers when set; the scheduler gets one worker per lane by default."""
    from edged.config import parse_config
    from edged.voice.sizing import synthesis_workers, window_lanes

    config = parse_config(options, tmp_path)
    lanes = window_lanes(config)
    assert lanes == max(1, min(len(os.sched_getaffinity(0)), most))
    if lanes > 1:  # one worker per lane, unless set
        assert synthesis_workers(config) == (config.limits.synthesis_workers or lanes)


def test_after_each_stream_a_hook_runs_even_while_others_are_open() -> None:
    """The daemon gives memory back after a stream while over its budget: under steady load the
    scheduler never goes idle, so that cannot wait for `on_idle`."""
    seen: list[str] = []
    changed = threading.Condition()
    release = threading.Event()

    def note(what: str) -> None:
        with changed:
            seen.append(f"{what} in {threading.current_thread().name}")
            changed.notify_all()

    def held() -> Iterator[Audio]:
        yield _chunk(1)
        assert release.wait(_TIMEOUT_S)
        yield _chunk(2)

    s = Scheduler(2, {"a": 2}, on_idle=lambda: note("idle"),
                  after_stream=lambda: note("ended"))
    s.start()
    try:
        long_one = s.submit(lambda _lanes: held(), rank=2, source="a")
        assert int(next(long_one).samples[0]) == 1
        with s.submit(lambda _lanes: iter([_chunk(7)]), rank=2, source="a") as short:
            assert [int(c.samples[0]) for c in short] == [7]
        with changed:
            assert changed.wait_for(lambda: len(seen) >= 1, _TIMEOUT_S)
        assert [x.split(" in ")[0] for x in seen] == ["ended"]  # the long one is still open
        assert all(x.split(" in ")[1].startswith("edged-synth-") for x in seen)
        release.set()
        assert [int(c.samples[0]) for c in long_one] == [2]
        with changed:
            assert changed.wait_for(lambda: len(seen) >= 3, _TIMEOUT_S)
        assert sorted(x.split(" in ")[0] for x in seen) == ["ended", "ended", "idle"]
    finally:
        release.set()
        s.stop()
