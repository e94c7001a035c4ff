"""What tests read of edged's insides that edged itself never needs: waits on its conditions and
counts of what it logs. Kept here, so the daemon carries no hooks for its tests (issue 24).
Each reaches into private state on purpose; if a name changes there, these fail loudly."""

from __future__ import annotations

import logging
import re
import threading
from types import TracebackType
from typing import TYPE_CHECKING

from edged.voice.catalog import hashes
from edged.voice.piper.sleep import SleepingModel
from edged.wyoming import WyomingServer

if TYPE_CHECKING:
    from edged.assembly import App
    from edged.memory import MemoryGuard

TIMEOUT_S = 10.0


def wait_connections(server: WyomingServer, count: int, timeout: float = TIMEOUT_S) -> bool:
    """Until exactly `count` Wyoming connections are open (each one gone having closed its
    speech stream); False on timeout. From any thread but the server's loop."""
    with server._count:
        return server._count.wait_for(lambda: server._active == count, timeout)


def wait_asleep(model: SleepingModel, timeout: float = TIMEOUT_S) -> bool:
    """Until the sleeping voice has dropped its sessions (True) or `timeout` passed."""
    with model._changed:
        return model._changed.wait_for(lambda: model._model is None, timeout)


def forget_process_hashes() -> None:
    """What a restart forgets of the file hashes (the memo file is what remains)."""
    with hashes._lock:
        hashes._memory.clear()


class LogCount:
    """Counts the records of `logger` whose message matches `pattern` while in use (a context
    manager): what happened, in order, as the daemon tells its operator."""

    def __init__(self, logger: str, pattern: str) -> None:
        self._logger = logging.getLogger(logger)
        self._pattern = re.compile(pattern)
        self._lock = threading.Lock()
        self.matches: list[re.Match[str]] = []
        self._handler = _Handler(self)
        self._level = self._logger.level

    def __enter__(self) -> LogCount:
        self._logger.addHandler(self._handler)
        self._logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._level)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.matches)

    def _offer(self, message: str) -> None:
        match = self._pattern.search(message)
        if match is not None:
            with self._lock:
                self.matches.append(match)


class _Handler(logging.Handler):
    def __init__(self, counter: LogCount) -> None:
        super().__init__(logging.DEBUG)
        self._counter = counter

    def emit(self, record: logging.LogRecord) -> None:
        self._counter._offer(record.getMessage())


def wakes() -> LogCount:
    """How often sleeping voices opened their sessions ("Voice X awake: ...")."""
    return LogCount("edged.voice.piper.sleep", r"^Voice (\S+) awake: sessions opened")


def unloads() -> LogCount:
    """Voices unloaded to stay within the budget, in order ("Unloaded voice X ...")."""
    return LogCount("edged.voice.loaded", r"^Unloaded voice (\S+) \(least recently used\)")


def no_memory_grace(app: App) -> MemoryGuard:
    """The in-process daemon's memory guard, its grace time (how long a peak may stay above
    the budget before it counts) set to none: a test of what the guard does once the grace has
    passed then waits on nothing. The guard is reached through the request path's parts."""
    guard = app.daemon._admission._policy._memory
    assert guard is not None
    guard.grace_s = 0.0
    return guard
