"""The outgoing side's flow control (edged/mqtt/outbox.py) as the link drives it: pending
messages, deferred acknowledgements, latest-value topics. (The daemon-level behaviour is in
test_flood.py; these pin the rules that make it hold.)"""

from __future__ import annotations

import threading

from edged.mqtt.outbox import Latest, Outbox


def test_acks_are_deferred_while_overloaded_and_released_at_half() -> None:
    """At `high` pending messages acknowledgements wait; they come back, in order, with the
    PUBACK that brings the backlog down to `high // 2`, once each; then nothing waits."""
    box: Outbox[str] = Outbox(high=4)
    for mid in range(4):
        assert box.sent(mid, "t", 10) is None
    assert box.overloaded()
    assert box.defer("a") and box.defer("b")
    assert box.acked(0)[2] == []  # 3 pending
    assert box.acked(1)[2] == ["a", "b"]  # 2 pending = high // 2
    assert box.acked(2)[2] == [] and box.acked(3)[2] == []
    assert not box.overloaded() and not box.defer("c") and len(box) == 0


def test_while_acks_wait_new_ones_queue_behind_them() -> None:
    """Once an acknowledgement waits, later ones wait too (order kept), even if the backlog
    dipped below `high` meanwhile."""
    box: Outbox[str] = Outbox(high=4)
    for mid in range(4):
        box.sent(mid, "t", 1)
    box.defer("a")
    box.acked(0)  # 3 pending: under high, but "a" still waits
    assert box.overloaded() and box.defer("b")
    assert box.acked(1)[2] == ["a", "b"]


def test_a_puback_before_the_send_is_recorded_is_not_lost() -> None:
    """paho may deliver the PUBACK before `sent` is called: the message never counts as
    pending, and a latest-value topic is freed (its waiting value is due at once)."""
    box: Outbox[str] = Outbox(high=10)
    assert box.acked(7) == ("?", None, [])
    assert box.sent(7, "t", 5) is None and len(box) == 0
    assert box.claim_latest(Latest("s", b"1", True))
    assert not box.claim_latest(Latest("s", b"2", True))
    box.acked(8)
    assert box.sent(8, "s", 1, latest=True) == Latest("s", b"2", True)


def test_latest_value_topics_keep_one_in_flight_and_the_newest_waiting() -> None:
    """A state published while one is in flight waits; newer ones replace it; the PUBACK of the
    one in flight makes the newest due."""
    box: Outbox[str] = Outbox(high=10)
    assert box.claim_latest(Latest("s", b"1", True))
    box.sent(1, "s", 1, latest=True)
    for value in (b"2", b"3", b"4"):
        assert not box.claim_latest(Latest("s", value, True))
    topic, due, _ = box.acked(1)
    assert topic == "s" and due == Latest("s", b"4", True)
    box.sent(2, "s", 1, latest=True)
    assert box.acked(2)[1] is None
    assert box.claim_latest(Latest("s", b"5", True))


def test_wait_bytes_returns_when_the_broker_took_enough_or_the_link_went_down() -> None:
    """The announcer's wait for pending audio ends on a PUBACK that brings the bytes under the
    limit, or at once when the link is down."""
    box: Outbox[str] = Outbox(high=10)
    up = threading.Event()
    up.set()
    box.sent(1, "audio", 1000)
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(box.wait_bytes(500, 10.0, up)))
    waiter.start()
    box.acked(1)
    waiter.join(10)
    assert result == [True]
    box.sent(2, "audio", 1000)
    up.clear()
    assert box.wait_bytes(500, 10.0, up) is False
