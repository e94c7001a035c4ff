"""The bounded priority queue between the MQTT thread and the announcer thread.

Best rank first (0 = critical), first come first served within a rank. When the queue is full
a better-ranked newcomer displaces the worst, newest waiting item (an alarm must never be
turned away because of queued chit-chat); anything else is refused with `QueueFull`.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class QueueFull(Exception):
    """No room, and the newcomer does not outrank anything waiting."""


class JobQueue(Generic[T]):
    """Thread-safe. `get` also waits while the queue is paused."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._heap: list[tuple[int, int, T]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._paused = False
        self._closed = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._heap)

    @property
    def paused(self) -> bool:
        return self._paused

    def put(self, item: T, rank: int, on_admit: Callable[[T], None] | None = None) -> T | None:
        """Queue `item`; returns the item it displaced, if any. Raises QueueFull.

        `on_admit(item)` runs under the queue lock before any consumer can see the item,
        so whatever it announces ("queued") always comes before what the consumer announces.
        """
        with self._cond:
            displaced = None
            if len(self._heap) >= self.maxsize:
                worst = max(range(len(self._heap)), key=lambda i: self._heap[i][:2])
                if self._heap[worst][0] <= rank:
                    raise QueueFull
                displaced = self._heap.pop(worst)[2]
                heapq.heapify(self._heap)
            if on_admit is not None:
                on_admit(item)
            heapq.heappush(self._heap, (rank, next(self._seq), item))
            self._cond.notify()
            return displaced

    def get(self, timeout: float,
            max_rank: Callable[[], int | None] | None = None) -> T | None:
        """The best item, or None after `timeout` seconds (or at once when closed). With
        `max_rank`, items of a worse rank stay (quiet hours hold them); it is asked each time
        an item arrives, so hours that begin while this waits hold what arrives after."""
        def eligible() -> bool:
            if not self._heap:
                return False
            limit = None if max_rank is None else max_rank()
            return limit is None or self._heap[0][0] <= limit

        with self._cond:
            ready = self._cond.wait_for(
                lambda: self._closed or (eligible() and not self._paused), timeout
            )
            if not ready or self._closed:
                return None
            return heapq.heappop(self._heap)[2]

    def count_worse(self, rank: int) -> int:
        """Items waiting whose rank is worse than `rank`."""
        with self._cond:
            return sum(1 for entry in self._heap if entry[0] > rank)

    def remove_if(self, which: Callable[[T], bool]) -> list[T]:
        """Remove and return the waiting items `which` selects, in queue order."""
        with self._cond:
            gone = [entry for entry in sorted(self._heap, key=lambda e: e[:2]) if which(entry[2])]
            if gone:
                self._heap = [entry for entry in self._heap if not which(entry[2])]
                heapq.heapify(self._heap)
            return [entry[2] for entry in gone]

    def drain(self) -> list[T]:
        """Remove and return everything waiting, in queue order."""
        with self._cond:
            items = [entry[2] for entry in sorted(self._heap, key=lambda e: e[:2])]
            self._heap.clear()
            return items

    def pause(self) -> None:
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def close(self) -> None:
        """Wake every consumer; `get` returns None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
