"""A voice whose ONNX sessions sleep while it is idle (`voice.sleep_after_s`).

On a 512 MB board the sessions and the weights they touch are about 40 MB that an idle daemon
holds for nothing: cached phrases never need them. `SleepingModel` opens the sessions when a
stream first needs them and drops them once no stream has used them for `idle_s` seconds. A
stream holds them from its first step to its last, so sleep never cuts one short.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ...memory import release_freed_memory, rss_mb
from ..lanes import Lanes
from .model import Decoded, Model

_LOGGER = logging.getLogger(__name__)


class SleepingModel:
    """A `Model` opened by `wake()` when a stream needs it; thread-safe."""

    def __init__(self, wake: Callable[[], Model], input_names: frozenset[str], *, idle_s: float,
                 name: str, model: Model | None = None) -> None:
        self.input_names = input_names
        self._wake = wake
        self._idle_s = idle_s
        self._name = name
        self._model = model
        self._streams = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._timer: threading.Timer | None = None
        self.wakes = 0
        """How often the sessions were opened (tests count on it)."""
        if model is not None:
            self._sleep_later()

    @property
    def awake(self) -> bool:
        return self._model is not None

    def wait_asleep(self, timeout: float) -> bool:
        """Until the sessions are dropped (True) or `timeout` seconds passed (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._model is None, timeout)

    def stream(self, pieces: Sequence[dict[str, np.ndarray]], *, first_window: int = 0,
               lanes: Lanes | None = None) -> Iterator[Decoded]:
        model = self._acquire()  # at the first step, on the scheduler worker that runs it
        try:
            yield from model.stream(pieces, first_window=first_window, lanes=lanes)
        finally:
            self._release()

    def reclaim(self, feeds: dict[str, np.ndarray]) -> None:
        """Awake: its sessions' arenas shrunk; asleep there is nothing to give back."""
        with self._lock:
            model = self._model
        if model is not None:
            model.reclaim(feeds)

    def sleep(self) -> bool:
        """Drop the sessions now unless a stream is using them; True when they were dropped."""
        with self._lock:
            if self._streams or self._model is None:
                return False
            self._model = None
            self._changed.notify_all()
        release_freed_memory()
        _LOGGER.info("Voice %s asleep: its sessions were dropped after %.0f s without synthesis "
                     "(process %.0f MB)", self._name, self._idle_s, rss_mb())
        return True

    def _acquire(self) -> Model:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._model is None:
                start = time.monotonic()
                self._model = self._wake()
                self.wakes += 1
                _LOGGER.info("Voice %s awake: sessions opened in %.0f ms", self._name,
                             1000 * (time.monotonic() - start))
            self._streams += 1
            return self._model

    def _release(self) -> None:
        with self._lock:
            self._streams -= 1
            if self._streams == 0:
                self._sleep_later()

    def _sleep_later(self) -> None:
        """(lock held, or in __init__) A timer that drops the sessions unless a stream comes
        first (`_acquire` cancels it)."""
        self._timer = threading.Timer(self._idle_s, self.sleep)
        self._timer.name = f"edged-sleep-{self._name}"
        self._timer.daemon = True
        self._timer.start()
