"""Which requests already reached their final event: the half of exactly-once that lives here.

The broker redelivers every request the daemon had not acknowledged. An acknowledgement can
be lost after the announcement was spoken (the daemon killed between the final event and the
PUBACK), so the ids of finished requests are appended to a small file and remembered for a
window (the broker session's lifetime: after that the broker cannot redeliver anyway).

With each id goes its outcome in brief (`{"event", "ts", "error"}`), so a client that asks
again for an id already finished can be told how it ended (`outcome`), not met with silence.

Each `add` is one `write` + `flush`: it survives the process being killed (the kernel has the
bytes), not a power cut; fsync per announcement would cost milliseconds on an SD card.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Final

from ..files import atomic_write, read_bounded

_LOGGER = logging.getLogger(__name__)
_MAX_FILE_BYTES: Final = 64 << 20
"""Far more than max_entries lines before a compaction: a bound, not a size to expect."""


class DoneLog:
    """Thread-safe set of recently finished request keys, backed by an append-only file."""

    def __init__(self, path: Path, window_s: float, max_entries: int = 50_000,
                 clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.window_s = window_s
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._done: dict[str, float] = {}
        self._outcomes: dict[str, dict[str, Any]] = {}
        self._lines = 0
        self._file: IO[str] | None = None
        self._load()

    def __contains__(self, key: str) -> bool:
        with self._lock:
            when = self._done.get(key)
        return when is not None and self._clock() - when < self.window_s

    def __len__(self) -> int:
        with self._lock:
            return len(self._done)

    def outcome(self, key: str) -> dict[str, Any] | None:
        """How `key` ended, in brief, while it is remembered."""
        with self._lock:
            return self._outcomes.get(key) if key in self._done else None

    def add(self, key: str, outcome: dict[str, Any] | None = None) -> None:
        now = self._clock()
        with self._lock:
            self._done.pop(key, None)  # oldest first: the order is the order of `when`
            self._done[key] = now
            if outcome is not None:
                self._outcomes[key] = outcome
            self._forget(now - self.window_s)
            if self._file is None:
                return
            try:
                self._file.write(self._line(key, now) + "\n")
                self._file.flush()
            except OSError as err:
                self._give_up(err)
                return
            self._lines += 1
            if self._lines > 2 * len(self._done) + 1000:
                self._compact()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    # -- file handling (called with the lock held, or from __init__) ----------------------

    def _load(self) -> None:
        cutoff = self._clock() - self.window_s
        try:
            raw = read_bounded(self.path, _MAX_FILE_BYTES).decode("utf-8", "replace")
        except FileNotFoundError:
            raw = ""
        except OSError as err:
            _LOGGER.warning("Cannot read %s (%s); starting without it", self.path, err.strerror)
            raw = ""
        for line in raw.splitlines():
            try:
                entry = json.loads(line)
                key, when = entry["k"], float(entry["t"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line after a crash
            if isinstance(key, str) and when > cutoff:
                self._done.pop(key, None)
                self._done[key] = when
                if isinstance(entry.get("o"), dict):
                    self._outcomes[key] = entry["o"]
        self._forget(cutoff)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._compact()
        except OSError as err:
            self._give_up(err)

    def _forget(self, cutoff: float) -> None:
        """Drop what is older than the window (the broker cannot redeliver it any more) and
        the oldest beyond max_entries: memory follows the rate of requests, not the uptime."""
        while self._done and (len(self._done) > self.max_entries
                              or next(iter(self._done.values())) <= cutoff):
            oldest = next(iter(self._done))
            del self._done[oldest]
            self._outcomes.pop(oldest, None)

    def _compact(self) -> None:
        lines = (self._line(key, when) + "\n" for key, when in self._done.items())
        atomic_write(self.path, "".join(lines), sync=False)
        if self._file is not None:
            self._file.close()
        self._file = self.path.open("a", encoding="utf-8")
        self._lines = len(self._done)

    def _line(self, key: str, when: float) -> str:
        entry: dict[str, Any] = {"k": key, "t": round(when, 3)}
        if key in self._outcomes:
            entry["o"] = self._outcomes[key]
        return json.dumps(entry)

    def _give_up(self, err: OSError) -> None:
        _LOGGER.warning(
            "Cannot write %s (%s): finished requests are remembered in memory only, so a "
            "request redelivered after a crash may be spoken twice", self.path,
            err.strerror or err,
        )
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
