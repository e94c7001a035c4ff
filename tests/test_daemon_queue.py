"""The daemon's priority queue and its memory of finished requests (pure, no broker)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from edged.daemon.donelog import DoneLog
from edged.daemon.jobqueue import JobQueue, QueueFull


def test_priorities_then_arrival_order() -> None:
    """Best rank first; within a rank, first come first served."""
    q: JobQueue[str] = JobQueue(10)
    for item, rank in [("low1", 3), ("n1", 2), ("crit", 0), ("n2", 2), ("high", 1), ("low2", 3)]:
        q.put(item, rank)
    assert [q.get(0) for _ in range(6)] == ["crit", "high", "n1", "n2", "low1", "low2"]
    assert q.get(0) is None


def test_full_queue_refuses_or_displaces_the_worst() -> None:
    """A full queue refuses an equal-or-worse newcomer ("busy"), but a better one displaces
    the worst, newest waiting item, which is handed back to be answered."""
    q: JobQueue[str] = JobQueue(3)
    q.put("n1", 2)
    q.put("low1", 3)
    q.put("low2", 3)
    with pytest.raises(QueueFull):
        q.put("low3", 3)
    assert q.put("high", 1) == "low2"
    assert q.put("crit", 0) == "low1"
    with pytest.raises(QueueFull):
        q.put("n2", 2)
    assert q.drain() == ["crit", "high", "n1"] and len(q) == 0


def test_on_admit_runs_before_a_consumer_sees_the_item() -> None:
    """The "queued" event is published under the queue lock, so "started" can't overtake it."""
    q: JobQueue[str] = JobQueue(3)
    log: list[str] = []
    got = threading.Event()

    def consume() -> None:
        item = q.get(5)
        log.append(f"got {item}")
        got.set()

    t = threading.Thread(target=consume)
    t.start()

    def admit(item: str) -> None:
        time.sleep(0.05)  # widen the window a racing consumer would need
        log.append(f"admitted {item}")

    q.put("x", 2, on_admit=admit)
    assert got.wait(5)
    t.join()
    assert log == ["admitted x", "got x"]


def test_pause_holds_and_close_releases() -> None:
    """Paused: get waits even with items; resume lets them through; close wakes getters."""
    q: JobQueue[str] = JobQueue(3)
    q.pause()
    q.put("a", 2)
    assert q.get(0.05) is None and q.paused
    q.resume()
    assert q.get(0.05) == "a"
    woke = threading.Event()
    t = threading.Thread(target=lambda: (q.get(30), woke.set()))
    t.start()
    q.close()
    assert woke.wait(5)
    t.join()


def test_donelog_survives_a_restart_and_forgets_after_the_window(tmp_path: Path) -> None:
    """Finished ids are on disk right after add (a SIGKILL keeps them) and expire."""
    path = tmp_path / "state" / "done.jsonl"
    log = DoneLog(path, window_s=3600)
    log.add("a")
    log.add("b")
    # No close(): what a killed daemon leaves behind must be enough.
    again = DoneLog(path, window_s=3600)
    assert "a" in again and "b" in again and "c" not in again
    lines = path.read_text().splitlines()
    old = json.dumps({"k": "old", "t": time.time() - 7200})
    path.write_text("\n".join([*lines, old, '{"k": "torn'] ) + "\n")
    later = DoneLog(path, window_s=3600)
    assert "old" not in later and len(later) == 2  # the torn last line is skipped


def test_donelog_is_bounded_and_compacts(tmp_path: Path) -> None:
    """The set and the file stay bounded however many requests pass."""
    path = tmp_path / "done.jsonl"
    log = DoneLog(path, window_s=3600, max_entries=100)
    for i in range(3000):
        log.add(f"id{i}")
    assert len(log) == 100 and "id2999" in log and "id0" not in log
    assert len(path.read_text().splitlines()) <= 2 * 100 + 1001
    log.close()
    assert len(DoneLog(path, window_s=3600, max_entries=100)) == 100


def test_donelog_forgets_in_memory_what_left_the_window(tmp_path: Path) -> None:
    """Memory follows the request rate over the window, not the uptime: ids older than the
    window leave memory as new ones come (and the compacted file), outcomes with them."""
    now = [1_000_000.0]
    log = DoneLog(tmp_path / "done.jsonl", window_s=100, clock=lambda: now[0])
    for i in range(50):
        log.add(f"early{i}", {"event": "finished"})
        now[0] += 1
    now[0] += 60  # early0..early10 are now 100 s old or more; the others are not
    log.add("late", {"event": "failed"})
    assert len(log) == 40 and "early10" not in log and "early11" in log
    assert log.outcome("early10") is None and log.outcome("late") == {"event": "failed"}
    log.add("early20")  # added again: it moves to the newest end and is kept longest
    now[0] += 95
    log.add("last")
    assert len(log) == 3 and all(k in log for k in ("early20", "late", "last"))
    log.close()
    assert len(DoneLog(tmp_path / "done.jsonl", window_s=100, clock=lambda: now[0])) == 3


def test_donelog_unwritable_folder_keeps_working_in_memory(tmp_path: Path) -> None:
    """A read-only state folder costs durability, not service."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    log = DoneLog(blocker / "done.jsonl", window_s=60)  # parent is a file: cannot mkdir
    log.add("x")
    assert "x" in log
