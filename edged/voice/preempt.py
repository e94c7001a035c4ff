"""Inferences a critical announcement can stop: how a scheduler worker cuts in.

A Kokoro piece is one decoder call of 1-2 s here and several on a Pi (its decoder normalizes
over what it is given, so it cannot be windowed unheard: kokoro/prepared.py), and a Piper voice
that is not prepared runs a whole sentence in one call. A critical announcement that waited for
such a call to end would wait that long. So every scheduler worker runs ONNX Runtime with run
options of its own (`CutIn`); the scheduler sets their `terminate` when a critical stream needs
the worker, ONNX Runtime stops the call at its next node (a few ms), and the worker makes the
critical stream's work on the spot (`CutIn.serve`), then runs the stopped call again from its
start: the same inputs, so the same audio; nothing is lost but the part already done.

Sessions opened by `onnx.open_session` are `Stoppable`. Outside the scheduler's workers (`edged
say`, tests, preparing a voice) they run as ever, and so does a call given run options of its
own (an arena shrinking run: a few ms).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

_worker = threading.local()


class CutIn:
    """One scheduler worker's run options, and what it does when they stop a call: `serve()`,
    the scheduler's critical work, run on this worker's thread."""

    def __init__(self, serve: Callable[[CutIn], None]) -> None:
        import onnxruntime as ort

        self.options = ort.RunOptions()
        self._serve = serve
        self.stopping = False
        self.paused_s = 0.0
        """Time spent on critical work inside stopped calls: not the stopped work's time."""

    def stop(self) -> None:
        """Stop the call this worker runs (or its next one) at its next node (the scheduler's
        lock held)."""
        self.stopping = True
        self.options.terminate = True

    def clear(self) -> None:
        """(the scheduler's lock held) Calls run to their end again."""
        self.stopping = False
        self.options.terminate = False

    def serve(self) -> None:
        started = time.monotonic()
        try:
            self._serve(self)
        finally:
            self.paused_s += time.monotonic() - started


def attach(cut_in: CutIn | None) -> None:
    """This thread (a scheduler worker) runs its sessions' calls with `cut_in`'s options."""
    _worker.cut_in = cut_in


def work_clock() -> float:
    """Seconds on a monotonic clock that stands still while this thread makes critical work
    inside a stopped call: the time of a step, a job or a call is the difference of two
    readings (outside the workers, plain monotonic time)."""
    cut_in: CutIn | None = getattr(_worker, "cut_in", None)
    return time.monotonic() - (cut_in.paused_s if cut_in is not None else 0.0)


class Stoppable:
    """An onnxruntime.InferenceSession whose `run` a scheduler worker's CutIn can stop; every
    other attribute is the session's."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def run(self, names: Any, feeds: Any, options: Any = None) -> Any:
        cut_in: CutIn | None = getattr(_worker, "cut_in", None)
        if cut_in is None or options is not None:
            return self._session.run(names, feeds, options)
        while True:
            if not cut_in.stopping:
                try:
                    return self._session.run(names, feeds, cut_in.options)
                except Exception:
                    if not cut_in.stopping:
                        raise  # the call's own error, not a stop
            cut_in.serve()  # the critical work first, then this call again from its start
