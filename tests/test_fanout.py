"""The daemon's event fan-out (events.Fanout): every listener gets every event in order through
its own bounded buffer; a slow one is cut off, never blocking the daemon or the others."""

from __future__ import annotations

import threading

from edged.daemon.events import Fanout, Finished, Queued, Started


def test_every_listener_gets_the_same_events_in_order() -> None:
    """Two listeners, three events: both take the same objects, oldest first."""
    fanout = Fanout()
    wakes = []
    a = fanout.listen(lambda: wakes.append("a"))
    b = fanout.listen(lambda: wakes.append("b"))
    events = [Queued("x"), Started("x"), Finished("x", cached=True)]
    for event in events:
        fanout.publish(event)
    assert a.take() == events and b.take() == events
    assert a.take() == []
    assert wakes.count("a") == 3 and wakes.count("b") == 3


def test_a_full_listener_is_cut_off_and_the_others_go_on() -> None:
    """A listener that never reads overflows at its bound: it is marked, keeps what it held, and
    gets nothing more; a listener that reads misses nothing."""
    fanout = Fanout()
    slow = fanout.listen(lambda: None, maxlen=3)
    fast = fanout.listen(lambda: None, maxlen=3)
    got = []
    for i in range(10):
        fanout.publish(Queued(f"r{i}"))
        got += fast.take()
    assert [e.id for e in got] == [f"r{i}" for i in range(10)]
    assert slow.overflowed and not fast.overflowed
    assert [e.id for e in slow.take()] == ["r0", "r1", "r2"]
    fanout.publish(Queued("later"))
    assert slow.take() == []


def test_a_failing_or_blocked_wake_never_reaches_the_publisher() -> None:
    """A wake callback that raises is contained; publishing from several threads at once loses
    nothing for a listener that keeps up."""
    fanout = Fanout()

    def broken() -> None:
        raise RuntimeError("listener bug")

    fanout.listen(broken)
    ok = fanout.listen(lambda: None, maxlen=10_000)
    threads = [threading.Thread(target=lambda n=n: [fanout.publish(Queued(f"{n}-{i}"))
                                                    for i in range(500)]) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ok.take()) == 2000


def test_closed_listeners_are_forgotten() -> None:
    """close() removes a listener; the daemon no longer offers it anything."""
    fanout = Fanout()
    listener = fanout.listen(lambda: None)
    assert len(fanout) == 1
    listener.close()
    fanout.publish(Queued("x"))
    assert len(fanout) == 0 and listener.take() == []
