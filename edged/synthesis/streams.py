"""What the scheduler hands a source: an `AudioStream` (the audio of one submission, in order,
as the workers make it) and the stream's lanes; what it raises at a source (`Busy`,
`SchedulerStopped`). The scheduling itself is scheduler.py's."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from ..audio import Audio
from ..voice.lanes import Claimable, Lanes

if TYPE_CHECKING:
    from .scheduler import Scheduler

Steps = Callable[[Lanes | None], Iterator[Audio]]
"""What a source submits: given the stream's lanes, a generator of its audio, one step per next()."""
URGENT: Final = 0
"""The rank of a critical announcement (daemon/priorities.py)."""


class Busy(Exception):
    """A source has as many streams open as it may; the message says which and how many."""


class SchedulerStopped(Exception):
    """The daemon is stopping: the stream will get no more audio."""


class AudioStream(Iterator[Audio]):
    """The audio of one submission, in order, as the workers make it. Close it when done early."""

    def __init__(self, scheduler: Scheduler, steps: Steps, rank: int, source: str,
                 seq: int) -> None:
        self._scheduler = scheduler
        self.rank = rank
        self.source = source
        self.seq = seq
        self.items: deque[Audio] = deque()
        self.running = False
        self.ended = False
        self.heard = False
        """Its first chunk is made."""
        self.closed = False
        self.error: BaseException | None = None
        self.counted = True
        """Holds one of its source's `max_streams` slots (until it ends or is closed)."""
        self.work_s = 0.0
        """Worker time spent on this stream's steps and jobs: its synthesis time."""
        self.steps = steps(_StreamLanes(scheduler, self) if scheduler.workers > 1 else None)
        """Made here, not run: the generator's body runs on the workers, one step at a time."""

    def __next__(self) -> Audio:
        return self._scheduler.take(self)

    def close(self) -> None:
        self._scheduler.drop(self)

    def __enter__(self) -> AudioStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _StreamLanes:
    """A stream's way to offer jobs to the other workers (voice/lanes.py)."""

    def __init__(self, scheduler: Scheduler, stream: AudioStream) -> None:
        self._scheduler = scheduler
        self._stream = stream
        self.width = scheduler.workers
        self.pieces_at_once = False  # a daemon's memory: one piece decoded per stream

    def offer(self, job: Claimable) -> None:
        self._scheduler.offer(self._stream, job)
