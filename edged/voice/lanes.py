"""Work of one synthesis stream done on spare workers, its results taken in order.

The synthesis scheduler runs a stream's steps on one worker at a time. Once a piece's latent is
known its decoder windows are independent, and the next piece's encoder does not wait for them
either: a step offers that work as jobs (`Ahead.push`), idle workers take them (best priority
first, as they take steps), and the stream takes the results in order (`Ahead.pop`).

- A job nobody has started when its result is needed is run by the step itself: nothing waits
  for a job that is not running, and a stream goes on alone when every other worker is busy.
- While the job it needs runs elsewhere, the step runs the oldest job nobody has started (so
  every core works), then waits.
- A job pushed onto an empty queue (the first window after the encoder: what the listener needs
  next) is not offered: the stream's own worker runs it at once.

The scheduler hands a stream its lanes when the stream is submitted (`Scheduler.submit(steps)`
calls `steps(lanes)`), and the voice passes them down to its windows. Outside the scheduler
(`synthesize`, `edged say`, tests) there are no lanes and every job runs inline, in order.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")

_QUEUED, _RUNNING, _DONE = range(3)


class LaneJob(Generic[T]):
    """One unit of work run once, by whoever claims it first (a worker, or the stream itself)."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn: Callable[[], T] | None = fn
        self._state = _QUEUED
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    @property
    def started(self) -> bool:
        return self._state != _QUEUED

    def claim(self) -> bool:
        """True once: the caller must then `run` it."""
        with self._lock:
            if self._state != _QUEUED:
                return False
            self._state = _RUNNING
            return True

    def run(self) -> None:
        """Run a claimed job; its error is kept for `result`, never raised here."""
        fn, self._fn = self._fn, None
        try:
            assert fn is not None, "a job runs once"
            self._value = fn()
        except BaseException as err:  # handed to whoever takes the result
            self._error = err
        finally:
            self._state = _DONE
            self._done.set()

    def result(self) -> T:
        """Its value (running it here if nobody started it), or its error raised."""
        if self.claim():
            self.run()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when there is no error


class Claimable(Protocol):
    """A job as the workers see it: claimed once, then run."""

    @property
    def started(self) -> bool: ...

    def claim(self) -> bool: ...

    def run(self) -> None: ...


class Lanes(Protocol):
    """What the scheduler offers a stream during a step."""

    width: int
    """Workers that may work for the stream at once, its own included (> 1)."""
    pieces_at_once: bool
    """Whole pieces (encoder and every window) may be jobs of their own, decoded at once: as
    fast as it goes, at the memory of `width` pieces (`edged say` to a file), not a daemon's
    (the scheduler's lanes: windows and the next encoder only, first audio first)."""

    def offer(self, job: Claimable) -> None:
        """Let an idle worker run `job` (at the stream's priority); it may never be taken."""
        ...


class Ahead(Generic[T]):
    """Jobs whose results are taken in the order they were pushed. Every job but the one at the
    head when it was pushed is offered to the other workers: the greedy choice keeps every core
    busy while there is work, and the caller bounds how much it pushes (one piece's windows and
    the next piece's encoder: a few hundred KB of results)."""

    def __init__(self, lanes: Lanes | None) -> None:
        self._lanes = lanes
        self._jobs: deque[LaneJob[T]] = deque()

    def __len__(self) -> int:
        return len(self._jobs)

    def push(self, fn: Callable[[], T]) -> None:
        job = LaneJob(fn)
        if self._jobs and self._lanes is not None:
            self._lanes.offer(job)
        self._jobs.append(job)

    def pop(self) -> T:
        """The oldest job's value (IndexError when there is none)."""
        head = self._jobs.popleft()
        if not head.claim():
            # Another worker runs it: meanwhile run the oldest job nobody has started, then wait.
            for job in self._jobs:
                if job.claim():
                    job.run()
                    break
        else:
            head.run()
        return head.result()


class SpareThreads:
    """Lanes outside the scheduler: `width - 1` threads of their own take what is offered
    (`edged say` writing a file: nothing else runs in the process). A context manager: the
    threads end with it."""

    pieces_at_once = True

    def __init__(self, width: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.width = width
        self._pool = ThreadPoolExecutor(max(1, width - 1), thread_name_prefix="edged-lane")

    def offer(self, job: Claimable) -> None:
        self._pool.submit(_run_unclaimed, job)

    def __enter__(self) -> SpareThreads:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _run_unclaimed(job: Claimable) -> None:
    if job.claim():  # else the stream took it first
        job.run()
