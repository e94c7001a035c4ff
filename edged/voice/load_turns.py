"""Whose voice loads next: one load at a time, the waiting ones best rank first.

    turns = LoadTurns()
    with turns.take(name, rank):   # waits while another load is under way
        ...                        # load `name`

Loads are serialized (each is measured with the others done: loaded.py). With a plain lock, a
critical request whose voice is not loaded waited behind every load queued before it, in
whatever order the lock woke them: each one a second or more here, minutes when a Kokoro model
is prepared first on a Pi. Now the load under way finishes, then the best rank goes (0:
critical), and requests of one rank go in the order they came.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class LoadTurns:
    """Thread-safe. `take(name, rank)` holds the one turn; `queue` says who has it and who
    waits (for the log at 3 a.m.: what an announcement waits for)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._queue: list[tuple[int, int, str]] = []
        """(rank, arrival, name) of each load waiting for its turn: a heap."""
        self._arrivals = itertools.count()
        self._holder: str | None = None

    @contextmanager
    def take(self, name: str, rank: int) -> Iterator[None]:
        with self._changed:
            ticket = (rank, next(self._arrivals), name)
            heapq.heappush(self._queue, ticket)
            try:
                self._changed.wait_for(lambda: self._holder is None and self._queue[0] == ticket)
            except BaseException:  # a ticket left in the queue would stop every later load
                self._queue.remove(ticket)
                heapq.heapify(self._queue)
                self._changed.notify_all()
                raise
            heapq.heappop(self._queue)
            self._holder = name
        try:
            yield
        finally:
            with self._changed:
                self._holder = None
                self._changed.notify_all()

    @property
    def queue(self) -> list[str]:
        """The voice being loaded, then those waiting, in the order they will load."""
        with self._changed:
            return ([self._holder] if self._holder is not None else []) + [
                name for _rank, _arrival, name in sorted(self._queue)]
