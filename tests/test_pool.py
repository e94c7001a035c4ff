"""The synthesis pool: `role: synth` daemons share `$share/edged-synth/<group_prefix>/synth/say`;
each request goes to one of them (the broker's choice) and is answered on its `reply_to` (or the
MQTT 5 Response Topic, with the Correlation Data echoed): events on the topic itself, audio on
`<reply_to>/audio/<id>`. At-least-once: a member killed with requests in hand gets them again
from the broker when it comes back (mosquitto keeps them in its session; it does not hand them
to another member). How long they wait is measured in bench/pool.py.
"""

from __future__ import annotations

import json
import signal
import threading
import uuid
from collections import Counter
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edged.audio import from_wav_bytes
from edged.config import ConfigError, parse_config
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.watcher import Watcher

_TIMEOUT_S = 20.0


class Replies:
    """A speaker that cannot synthesize: publishes to the pool, listens on its reply topic
    (MQTT 5: it also reads each answer's Correlation Data)."""

    def __init__(self, port: int, house: str) -> None:
        self.house = house
        self.reply = f"{house}/reply/speaker-{uuid.uuid4().hex[:6]}"  # under mqtt.reply_prefix
        self.messages: list[tuple[str, bytes, bytes | None]] = []
        self._cond = threading.Condition()
        ready = threading.Event()
        c = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=MQTTProtocolVersion.MQTTv5)
        c.on_message = self._on_message
        c.on_subscribe = lambda *a: ready.set()
        c.connect("127.0.0.1", port)
        c.subscribe(f"{self.reply}/#", 1)  # also matches the reply topic itself
        c.loop_start()
        assert ready.wait(_TIMEOUT_S)
        self.client = c

    def _on_message(self, _c, _u, msg: mqtt.MQTTMessage) -> None:
        corr = getattr(msg.properties, "CorrelationData", None)
        with self._cond:
            self.messages.append((msg.topic, msg.payload, corr))
            self._cond.notify_all()

    def ask(self, payload: dict | bytes, response: str | None = None,
            correlation: bytes | None = None) -> None:
        props = None
        if response is not None:
            props = Properties(PacketTypes.PUBLISH)
            props.ResponseTopic = response
            if correlation is not None:
                props.CorrelationData = correlation
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.client.publish(f"{self.house}/synth/say", data, qos=1,
                            properties=props).wait_for_publish(_TIMEOUT_S)

    def final(self, rid: str) -> dict:
        return self.event(rid, ("finished", "failed", "rejected"))

    def event(self, rid: str, kinds: str | tuple[str, ...]) -> dict:
        kinds = (kinds,) if isinstance(kinds, str) else kinds

        def found() -> dict | None:
            for topic, payload, _ in self.messages:
                if topic == self.reply:
                    event = json.loads(payload)
                    if event["id"] == rid and event["event"] in kinds:
                        return event
            return None

        with self._cond:
            assert self._cond.wait_for(lambda: found() is not None, _TIMEOUT_S), self.messages
            event = found()
        assert event is not None
        return event

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


@pytest.fixture
def house(unique_prefix: str) -> str:
    return f"{unique_prefix}-house"


def _synth(make, house: str, name: str) -> DaemonProc:
    return make(name, device_id=name, role="synth",
                mqtt={"group_prefix": house, "topic_prefix": f"{house}-dev/{name}"})


def _two_members(make, port: int, house: str) -> tuple[DaemonProc, list[Watcher]]:
    """Synth daemons s1 and s2 started, each with a watcher on its prefix: (s1, watchers)."""
    daemons, watchers = [], []
    for name in ("s1", "s2"):
        watchers.append(Watcher(port, f"{house}-dev/{name}"))
        daemons.append(_synth(make, house, name).start(watchers[-1]))
    return daemons[0], watchers


def test_the_pool_shares_requests_and_answers_each_on_its_reply_topic(
        make_daemon, broker: Broker, house: str) -> None:
    """Two synth daemons, six requests with reply_to: each answered once on the reply topic
    (queued, started, finished) with a WAV on <reply_to>/audio/<id>; the broker spread them
    over both members (device_id says who)."""
    _, members = _two_members(make_daemon, broker.port, house)
    speaker = Replies(broker.port, house)
    try:
        ids = [f"p-{i}-{uuid.uuid4().hex[:6]}" for i in range(6)]
        for rid in ids:
            speaker.ask({"text": f"Pool request {rid}.", "id": rid, "reply_to": speaker.reply})
        who = Counter()
        for rid in ids:
            final = speaker.final(rid)
            assert final["event"] == "finished", final
            who[final["device_id"]] += 1
            kinds = [json.loads(p)["event"] for t, p, _ in speaker.messages
                     if t == speaker.reply and json.loads(p)["id"] == rid]
            assert kinds == ["queued", "started", "finished"]
            wavs = [p for t, p, _ in speaker.messages if t == f"{speaker.reply}/audio/{rid}"]
            assert len(wavs) == 1 and from_wav_bytes(wavs[0]).duration_s > 0
        assert set(who) == {"s1", "s2"}, who
    finally:
        speaker.close()
        for w in members:
            w.close()


def test_mqtt5_response_topic_and_correlation_data_are_honoured(
        make_daemon, broker: Broker, house: str) -> None:
    """A request with no reply_to but an MQTT 5 Response Topic is answered there, every answer
    (events and audio) carrying the request's Correlation Data; a pool request with neither
    is rejected on the member's own event topic, and one naming a request topic as its
    reply is rejected too (an answer must never be taken for a request)."""
    w = Watcher(broker.port, f"{house}-dev/s1")
    _synth(make_daemon, house, "s1").start(w)
    speaker = Replies(broker.port, house)
    try:
        rid = f"c-{uuid.uuid4().hex[:6]}"
        speaker.ask({"text": "Correlated.", "id": rid}, response=speaker.reply,
                    correlation=b"\x00tag-7")
        assert speaker.final(rid)["event"] == "finished"
        answers = [(t, c) for t, p, c in speaker.messages
                   if t == speaker.reply and json.loads(p)["id"] == rid
                   or t == f"{speaker.reply}/audio/{rid}"]
        assert len(answers) == 4 and {c for _, c in answers} == {b"\x00tag-7"}
        lost, loop = f"l-{uuid.uuid4().hex[:6]}", f"r-{uuid.uuid4().hex[:6]}"
        speaker.ask({"text": "Where to?", "id": lost})
        speaker.ask({"text": "Loop.", "id": loop, "reply_to": f"{house}/reply/s1/say"})
        for bad, reason in ((lost, "reply_to is missing"), (loop, "must not be a request topic")):
            event = w.final(bad)
            assert event["event"] == "rejected" and reason in event["error"], event
    finally:
        speaker.close()
        w.close()


def test_a_killed_member_gets_its_requests_again_when_it_comes_back(
        make_daemon, broker: Broker, house: str) -> None:
    """At-least-once with the same id: a member paused (its own control topic) holds its share
    of the pool's requests unacknowledged; SIGKILLed, it loses nothing: restarted, the broker
    hands that member the same requests again (not to the other member) and each is answered
    once, by it."""
    d, (w, other) = _two_members(make_daemon, broker.port, house)
    speaker = Replies(broker.port, house)
    try:
        w.control("pause")
        ids = [f"k-{i}-{uuid.uuid4().hex[:6]}" for i in range(4)]
        for rid in ids:
            speaker.ask({"text": f"Kept {rid}.", "id": rid, "reply_to": speaker.reply})
        takers = {rid: speaker.event(rid, "queued")["device_id"] for rid in ids}
        held = [rid for rid, who in takers.items() if who == "s1"]
        assert held and len(held) < len(ids), takers  # the broker spread them
        d.signal(signal.SIGKILL)
        d.wait()
        d.start(w)  # not paused any more
        for rid in ids:
            final = speaker.final(rid)
            assert final["event"] == "finished" and final["device_id"] == takers[rid], final
        finals = Counter(json.loads(p)["id"] for t, p, _ in speaker.messages
                         if t == speaker.reply and json.loads(p)["event"] == "finished")
        assert all(finals[rid] == 1 for rid in ids), finals
    finally:
        speaker.close()
        w.close()
        other.close()


def test_a_member_stopped_cleanly_leaves_the_pool(make_daemon, broker: Broker,
                                                  house: str) -> None:
    """SIGTERM: the member unsubscribes from the pool before it disconnects, so the broker's
    round-robin no longer counts it: every request sent while it is away goes to the other
    member (a SIGKILLed member cannot do this: see the test above and docs/house.md)."""
    d, (w, other) = _two_members(make_daemon, broker.port, house)
    speaker = Replies(broker.port, house)
    try:
        d.stop()
        ids = [f"a-{i}-{uuid.uuid4().hex[:6]}" for i in range(4)]
        for rid in ids:
            speaker.ask({"text": f"Away {rid}.", "id": rid, "reply_to": speaker.reply})
        assert [speaker.final(rid)["device_id"] for rid in ids] == ["s2"] * 4
    finally:
        speaker.close()
        w.close()
        other.close()


def test_synth_role_config_rules(tmp_path: Path) -> None:
    """role: synth has no loudspeaker: it needs output: publish and cannot join groups."""
    for data, message in (({"role": "synth"}, "set output: publish"),
                          ({"role": "synth", "output": "publish", "groups": ["all"]},
                           "a synth daemon")):
        with pytest.raises(ConfigError, match=message):
            parse_config(data, tmp_path)
    assert parse_config({"role": "synth", "output": "publish"}, tmp_path).role == "synth"
