"""run_ahead: a worker thread making items before they are asked for, bounded, closable."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from edged.ahead import run_ahead


def test_items_in_order_and_exceptions_reach_the_consumer() -> None:
    def source() -> Iterator[int]:
        yield from range(5)
        raise ValueError("inference failed")

    got = []
    with pytest.raises(ValueError, match="inference failed"):
        for item in run_ahead(source(), 2):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]


def test_worker_stays_at_most_depth_items_ahead() -> None:
    made: list[int] = []
    room = threading.Condition()

    def source() -> Iterator[int]:
        for i in range(20):
            with room:
                made.append(i)
                room.notify_all()
            yield i

    items = run_ahead(source(), 3)
    assert next(items) == 0
    with room:  # the worker fills the buffer, then must wait for the consumer
        assert room.wait_for(lambda: len(made) >= 4, timeout=5)
        # Blocked in put() with the buffer full: making a sixth item would notify `room`.
        assert not room.wait_for(lambda: len(made) > 1 + 3 + 1, timeout=0.3)
    assert list(items) == list(range(1, 20))


def test_closing_early_does_not_wait_for_the_item_being_made() -> None:
    """A skipped announcement must not wait for the inference still running."""
    release = threading.Event()
    finished = threading.Event()

    def source() -> Iterator[int]:
        yield 1
        release.wait(10)  # a long inference
        yield 2
        finished.set()
        yield 3

    items = run_ahead(source(), 1)
    assert next(items) == 1
    start = time.monotonic()
    items.close()
    assert time.monotonic() - start < 1.0
    release.set()
    assert not finished.wait(1.0)  # the worker ends at its next step instead of going on
