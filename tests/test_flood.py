"""The flood of issue 12 on the real daemon and broker: 2,000 QoS 0 and 500 QoS 1 requests and
500 controls at full speed. Every QoS 1 request gets exactly one final event (before, about
1,000 final events were lost to the outgoing-message cap), every QoS 0 request or control gets
its own answer or is counted in an `overloaded` event, and the daemon stays within its memory
budget."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, peak_rss_mb
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher

_MEMORY_MB = 400
_FINAL_S = 120.0
"""A bound for the whole flood to be answered (about 20 s here), not a speed target."""
_ANSWERS = ("rejected", "queued")


def _flood() -> list[tuple[str, str, dict, int]]:
    """(kind, id, payload, qos) for 2,000 QoS 0 and 500 QoS 1 requests and 500 controls, in a
    seeded random order."""
    rng = random.Random(7)
    items = [("q0", f"q0-{i}", {"text": f"Flood zero {i}.", "id": f"q0-{i}"}, 0)
             for i in range(2000)]
    items += [("q1", f"q1-{i}", {"text": f"Flood one {i}.", "id": f"q1-{i}",
                                 "priority": rng.choice(["low", "normal", "high"])}, 1)
              for i in range(500)]
    items += [("c", f"c-{i}", {"action": rng.choice(["skip", "clear", "stop", "pause",
                                                     "resume"]), "id": f"c-{i}"}, i % 2)
              for i in range(500)]
    rng.shuffle(items)
    return items


def _publisher(port: int) -> mqtt.Client:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"flood-{uuid.uuid4().hex[:6]}",
                         protocol=MQTTProtocolVersion.MQTTv5)
    client.max_inflight_messages_set(0)  # no limit of its own: as fast as the broker takes it
    client.connect("127.0.0.1", port)
    client.loop_start()
    return client


@pytest.mark.timeout(600)
def test_a_flood_gets_every_qos1_request_its_final_event(tmp_path: Path,
                                                         tiny_voice_path: Path) -> None:
    """2,000 QoS 0 + 500 QoS 1 requests + 500 controls at full speed: each QoS 1 request has
    exactly one final event; each QoS 0 request and control has exactly one answer or was
    counted in an `overloaded` event; peak RSS stays under limits.memory_mb."""
    port = free_port()
    broker = Broker(tmp_path / "broker", f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                    "max_queued_messages 0\n", [port]).start()
    prefix = f"edged-flood/{uuid.uuid4().hex[:10]}"
    w = Watcher(port, prefix, topics=("event", "availability"))
    d = DaemonProc(tmp_path / "d", port, prefix, tiny_voice_path, log_level="warning",
                   limits={"memory_mb": _MEMORY_MB})
    publisher = None
    try:
        d.start(w)
        publisher = _publisher(port)
        items = _flood()
        infos = [publisher.publish(f"{prefix}/{'control' if kind == 'c' else 'say'}",
                                   _json(payload), qos=qos) for kind, _id, payload, qos in items]
        for info in infos:
            info.wait_for_publish(_FINAL_S)
        resume = f"r-{uuid.uuid4().hex}"  # a control above may have paused the queue
        w.publish("control", {"action": "resume", "id": resume})
        w.event(resume, "finished", _FINAL_S)
        for _kind, rid, _payload, _qos in (i for i in items if i[0] == "q1"):
            w.final(rid, _FINAL_S)
        sentinel = f"s-{uuid.uuid4().hex}"
        w.publish("say", {"text": "Sentinel.", "id": sentinel, "priority": "low"})
        w.final(sentinel, _FINAL_S)
        _wait_shed_reported(w, items)
        _check(w, items)
        assert d.alive()
        peak = peak_rss_mb(d.proc.pid)
        assert peak < _MEMORY_MB, f"peak RSS {peak:.0f} MiB"
        assert "Traceback" not in d.log_text()
    finally:
        if publisher is not None:
            publisher.disconnect()
            publisher.loop_stop()
        d.stop()
        w.close()
        broker.stop()


def _json(payload: dict) -> bytes:
    import json

    return json.dumps(payload).encode()


def _answers(events: list[dict]) -> Counter[str]:
    return Counter(e["id"] for e in events if e["event"] in _ANSWERS
                   or (e["event"] == "finished" and "action" in e))


def _unanswered_and_shed(events: list[dict], items: list[tuple[str, str, dict, int]],
                         ) -> tuple[int, int]:
    """QoS 0 requests and controls without an answer; those the `overloaded` events counted."""
    answers = _answers(events)
    unanswered = sum(1 for _kind, rid, _p, qos in items if qos == 0 and answers[rid] == 0)
    return unanswered, sum(e["refused"] for e in events if e["event"] == "overloaded")


def _wait_shed_reported(w: Watcher, items: list[tuple[str, str, dict, int]]) -> None:
    """Until the `overloaded` events count as many QoS 0 requests as went unanswered: the daemon
    reports the last ones once it is idle again, up to a second after the previous report
    (edged.daemon.refusals), which can be after the sentinel's final event."""
    topic = f"{w.prefix}/event"
    while True:
        mark = w.mark()
        unanswered, shed = _unanswered_and_shed(w.events(), items)
        if shed >= unanswered:
            return
        w.wait(lambda m: m.topic == topic and m.json().get("event") == "overloaded", _FINAL_S,
               mark)


def _check(w: Watcher, items: list[tuple[str, str, dict, int]]) -> None:
    events = w.events()
    answers = _answers(events)
    finals = Counter(e["id"] for e in events if e["event"] in ("finished", "failed", "rejected")
                     and "action" not in e)
    queued = {e["id"] for e in events if e["event"] == "queued"}
    kinds = Counter(e["event"] for e in events)
    for kind, rid, _payload, _qos in items:
        assert answers[rid] <= 1, (rid, kinds)
        if kind == "q1":
            assert answers[rid] == 1 and finals[rid] == 1, (rid, kinds)
        if rid in queued:
            assert finals[rid] == 1, (rid, kinds)
    unanswered, shed = _unanswered_and_shed(events, items)
    print(f"flood outcomes: {dict(kinds)}, QoS 0 or controls refused under overload: {shed}")
    assert unanswered == shed, (unanswered, shed, kinds)
