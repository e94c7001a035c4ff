"""One synthesis scheduler for every source: workers run the inferences, best priority first, one
step at a time, and hand the audio out as streams.

    a source's thread (MQTT announcer, warm, ...)    scheduler workers ("edged-synth-N")
    stream = submit(steps, rank, source)        ──►  pick the best runnable stream: rank, then age
    for chunk in stream: play / publish         ◄──  next(steps): one encoder run and window, or one
    stream.close()  (early: dropped, no wait)        more window; up to `depth` chunks ahead

- A step is one decoder window of a prepared voice (one piece of an unprepared one, or of
  Kokoro). A critical announcement does not wait for other work's steps to end: the workers
  running them stop their inference at its next node (voice/preempt.py), make the critical
  stream's work, then run the stopped inference again. Until its first chunk every such worker
  is stopped; after it, one, when the critical stream has no chunk ahead and no worker is free.
- Per source, at most `max_streams` streams are open at once; one more is refused at once with
  `Busy` (a source that queues, like MQTT's announcement queue, does so in front of this). A
  stream holds its slot until it ends or its consumer closes it.
- A stream its consumer closes is dropped at its next step: close() never waits for inference.
- Lanes: during a step, a stream may offer jobs (the decoder windows of a piece, the next piece's
  encoder: voice/lanes.py) that idle workers run, best priority first like steps; the stream
  takes their results in order and runs itself what nobody has started. So one announcement uses
  every worker, and a critical one still gets the next worker that finishes a window.
- Until a critical stream (rank 0) has its first chunk, no worker starts other work: the cores
  are its own for its encoder and first window, and its first sound waits for the windows
  already running elsewhere, not for ones started beside it.
- Workers: as many as `voice/sizing.py` says the cores and the memory budget hold.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from ..audio import Audio
from ..voice import preempt
from ..voice.lanes import Claimable
from ..voice.preempt import CutIn
from .streams import URGENT, AudioStream, Busy, SchedulerStopped, Steps

_LOGGER = logging.getLogger(__name__)
DEPTH: Final = 2
"""Chunks a stream is synthesized ahead of its consumer: playback and inference overlap, and a
chunk is at most one window (~1.1 s of audio, 50 KB)."""


class Scheduler:
    """Thread-safe. `start`, `submit` from any thread, `stop` at the end."""

    def __init__(self, workers: int, max_streams: Mapping[str, int], depth: int = DEPTH,
                 on_idle: Callable[[], object] | None = None,
                 after_stream: Callable[[], object] | None = None) -> None:
        """`on_idle()`: run by a worker each time the scheduler goes idle after work (no stream
        open): the daemon gives memory back then. `after_stream()`: run by the worker that
        made a stream's last step, other streams open or not (the daemon gives memory back
        then too when it is over its budget: under steady load it is never idle)."""
        self.workers = workers
        self._on_idle = on_idle
        self._after_stream = after_stream
        self._worked = False
        self._limits = dict(max_streams)
        self._depth = depth
        self._cond = threading.Condition()
        self._streams: list[AudioStream] = []
        self._jobs: list[tuple[AudioStream, Claimable]] = []
        self._busy: dict[CutIn, int] = {}
        """The rank of the work each busy worker runs."""
        self.stopped_calls = 0
        """Inferences of other work stopped for a critical stream (to run again after it)."""
        self._open: Counter[str] = Counter()
        self._seq = 0
        self._stopping = False
        self._threads = [threading.Thread(target=self._work, name=f"edged-synth-{i}", daemon=True)
                         for i in range(workers)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()
        _LOGGER.info("Synthesis scheduler: %d worker(s); streams per source: %s", self.workers,
                     ", ".join(f"{k} {v}" for k, v in self._limits.items()))

    def stop(self, timeout_s: float = 5.0) -> None:
        """End every open stream (its consumer gets SchedulerStopped) and the workers."""
        with self._cond:
            self._stopping = True
            for stream in list(self._streams):
                self._end(stream, SchedulerStopped("the synthesis scheduler stopped"))
            self._cond.notify_all()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout_s)

    def submit(self, steps: Steps, *, rank: int, source: str) -> AudioStream:
        """A stream of what `steps(lanes)` yields, made by the workers (`lanes`: the stream's
        way to spare workers, None with one worker); Busy when `source` is at its limit,
        KeyError for a source that was not declared."""
        with self._cond:
            limit = self._limits[source]
            if self._stopping:
                raise SchedulerStopped("the synthesis scheduler stopped")
            if self._open[source] >= limit:
                raise Busy(f"busy: {source} already has {self._open[source]} synthesis "
                           f"stream(s) running, its limit")
            self._seq += 1
            stream = AudioStream(self, steps, rank, source, self._seq)
            self._streams.append(stream)
            self._open[source] += 1
            if rank == URGENT:
                self._cut_in()
            self._cond.notify_all()
            return stream

    def offer(self, stream: AudioStream, job: Claimable) -> None:
        """A job of `stream` any idle worker may run (at the stream's priority)."""
        with self._cond:
            if not stream.closed and not stream.ended and not self._stopping:
                self._jobs.append((stream, job))
                self._cond.notify_all()

    def open_streams(self) -> dict[str, int]:
        with self._cond:
            return {source: self._open[source] for source in self._limits}

    # -- consumers ---------------------------------------------------------------------------

    def take(self, stream: AudioStream) -> Audio:
        with self._cond:
            while not stream.items and not stream.ended:
                self._cond.wait()
            if stream.items:
                item = stream.items.popleft()
                if stream.rank == URGENT:
                    self._cut_in()
                self._cond.notify_all()  # room for one more: a worker may go on
                return item
            if stream.error is not None and not stream.closed:
                raise stream.error
            raise StopIteration

    def drop(self, stream: AudioStream) -> None:
        with self._cond:
            if stream.closed:
                return
            stream.closed = True
            stream.items.clear()
            self._jobs = [(s, j) for s, j in self._jobs if s is not stream]
            self._release(stream)  # the source may open another now, whatever the worker does
            self._cond.notify_all()
            if stream.ended or stream.running:
                return  # a worker that is stepping it ends it after the step
            stream.running = True  # claimed: no worker picks it up now
        _close(stream.steps)  # not running, so no worker is inside the generator
        with self._cond:
            stream.running = False
            self._end(stream, None)
            self._cond.notify_all()

    # -- workers -----------------------------------------------------------------------------

    def _work(self) -> None:
        cut_in = CutIn(self._serve)
        preempt.attach(cut_in)
        while True:
            with self._cond:
                self._busy.pop(cut_in, None)
                cut_in.clear()
                chosen = self._wait_for_work(cut_in)
                if self._stopping:
                    return
            self._run(chosen)

    def _run(self, chosen: AudioStream | tuple[AudioStream, Claimable] | None) -> None:
        if chosen is None:
            self._idle()
        elif isinstance(chosen, AudioStream):
            self._step(chosen)
        else:
            self._run_job(*chosen)

    def _wait_for_work(self, cut_in: CutIn) -> AudioStream | tuple[AudioStream, Claimable] | None:
        """The next work (lock held), claimed; None: the scheduler has just gone idle after
        work and this worker runs `on_idle` first."""
        while not self._stopping:
            chosen = self._next()
            if chosen is not None:
                self._claim(chosen, cut_in)
                self._worked = True
                return chosen
            if self._worked and self._on_idle is not None and not self._streams:
                self._worked = False
                return None
            self._cond.wait()
        return None

    def _claim(self, chosen: AudioStream | tuple[AudioStream, Claimable], cut_in: CutIn) -> None:
        """(lock held) `cut_in`'s worker runs `chosen` now."""
        if isinstance(chosen, AudioStream):
            chosen.running = True
            self._busy[cut_in] = chosen.rank
        else:
            self._busy[cut_in] = chosen[0].rank

    def _cut_in(self) -> None:
        """(lock held) Stop what workers run for a critical stream: every worker on other work
        until its first chunk; after it, one, when it has no chunk ahead of its consumer (the
        player is on its last one) and no worker is free or on critical work already. Stopped
        workers run `_serve`."""
        urgent = [s for s in self._streams if s.rank == URGENT and not s.ended]
        others = [c for c, rank in self._busy.items() if rank > URGENT and not c.stopping]
        if not urgent or not others:
            return
        if all(s.heard for s in urgent):
            # Not at every chunk taken: each stop costs the stopped call what it had done.
            waiting = any(not s.running and not s.items for s in urgent)
            free = len(self._busy) < self.workers
            if not waiting or free or URGENT in self._busy.values():
                return
            others = [max(others, key=self._busy.__getitem__)]  # the least urgent work
        for cut_in in others:
            cut_in.stop()
        self.stopped_calls += len(others)
        first = [s for s in urgent if not s.heard]
        _LOGGER.log(logging.INFO if first else logging.DEBUG,
                    "Critical work (%s) cuts in: %d worker(s) stop their inference and run it "
                    "again after it", ", ".join(sorted({s.source for s in first or urgent})),
                    len(others))

    def _serve(self, cut_in: CutIn) -> None:
        """On a worker whose inference was stopped (voice/preempt.py): the critical work, until
        its stream's first chunk and while it has work; then back to the stopped call."""
        with self._cond:
            rank = self._busy.get(cut_in, URGENT)
            self._busy[cut_in] = URGENT  # working for the alarm: not stopped again meanwhile
            cut_in.clear()
        while True:
            with self._cond:
                chosen = None
                while not self._stopping:
                    chosen = self._next(URGENT)
                    if chosen is not None or all(s.heard for s in self._streams
                                                 if s.rank == URGENT):
                        break
                    self._cond.wait()  # the critical stream runs elsewhere: the cores are its
                if chosen is None:
                    self._busy[cut_in] = rank
                    cut_in.clear()
                    return
                self._claim(chosen, cut_in)
            self._run(chosen)

    def _idle(self) -> None:
        """Nothing open, nothing queued: give memory back (voices' arenas: LoadedVoices)."""
        assert self._on_idle is not None
        self._hook(self._on_idle)

    @staticmethod
    def _hook(hook: Callable[[], object]) -> None:
        try:
            hook()
        except Exception:  # memory is a nicety here; a worker must never die of it
            _LOGGER.exception("Giving memory back after synthesis failed")

    def _next(self, worst: int | None = None) -> AudioStream | tuple[AudioStream, Claimable] | None:
        """The best stream with room ahead, or an offered job at least as urgent (lock held),
        of rank `worst` at most; None: nothing to do now. Jobs come first among equals: they
        are older work."""
        self._jobs = [(s, j) for s, j in self._jobs if not j.started]
        if any(s.rank == URGENT and not s.heard for s in self._streams):
            worst = URGENT  # only the alarm's work until its first sound
        job = min(((s, j) for s, j in self._jobs if worst is None or s.rank <= worst),
                  key=lambda e: (e[0].rank, e[0].seq), default=None)
        runnable = [s for s in self._streams
                    if not s.running and not s.ended and len(s.items) < self._depth
                    and (worst is None or s.rank <= worst)]
        stream = min(runnable, key=lambda s: (s.rank, s.seq), default=None)
        if job is not None and (stream is None or
                                (job[0].rank, job[0].seq) <= (stream.rank, stream.seq)):
            self._jobs.remove(job)
            return job
        return stream

    def _run_job(self, stream: AudioStream, job: Claimable) -> None:
        if not job.claim():
            return  # the stream ran it itself meanwhile
        started = preempt.work_clock()  # not counting critical work made inside it
        job.run()  # keeps its error for the stream: never raises
        with self._cond:
            stream.work_s += preempt.work_clock() - started

    def _step(self, stream: AudioStream) -> None:
        started = preempt.work_clock()
        error: BaseException | None = None
        item: Audio | None = None
        try:
            item = next(stream.steps)
        except StopIteration:
            pass
        except BaseException as err:  # handed to the consumer, raised there: never a dead worker
            error = err
        elapsed = preempt.work_clock() - started
        with self._cond:
            stream.running = False
            stream.work_s += elapsed
            closed = stream.closed
            if item is None:
                self._end(stream, error)
            elif not closed:
                stream.items.append(item)
                stream.heard = True
            self._cond.notify_all()
        if closed and item is not None:  # the consumer left during the step: drop it now
            _close(stream.steps)
            with self._cond:
                self._end(stream, None)
                self._cond.notify_all()
        if item is None and self._after_stream is not None:
            self._hook(self._after_stream)

    def _end(self, stream: AudioStream, error: BaseException | None) -> None:
        """No more steps for `stream` (lock held); its slot is free again."""
        if stream.ended:
            return
        stream.ended = True
        stream.error = error
        self._streams.remove(stream)
        self._jobs = [(s, j) for s, j in self._jobs if s is not stream]
        self._release(stream)

    def _release(self, stream: AudioStream) -> None:
        """Give the stream's slot back to its source, once (lock held)."""
        if stream.counted:
            stream.counted = False
            self._open[stream.source] -= 1


def _close(steps: Iterator[Audio]) -> None:
    """End a generator where it stands (its `finally` runs; a voice's stream keeps nothing)."""
    close = getattr(steps, "close", None)
    if close is not None:
        close()
