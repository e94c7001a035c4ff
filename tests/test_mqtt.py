"""Request parsing (pure) and the paho link (against a real mosquitto)."""

from __future__ import annotations

import json
import queue
import threading
import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np
import paho.mqtt.client as mqtt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from edged.audio import Audio, from_wav_bytes
from edged.config import Config, ConfigError, MqttConfig, TlsConfig
from edged.daemon.requests import Request, RequestError, Rules, parse_control, parse_request
from edged.mqtt import AudioSink, MqttLink, Origin, Ticket, Topics
from tests.harness.broker import Broker
from tests.harness.cases import BAD_PAYLOADS
from tests.harness.ports import free_port

_TIMEOUT_S = 10.0
RULES = Rules(max_chars=500, voices=("joe", "/voices/tiny.onnx"), outputs=("publish",))

# -- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(("payload", "reason"), BAD_PAYLOADS,
                         ids=[f"{i}-{p[:20]!r}" for i, (p, _) in enumerate(BAD_PAYLOADS)])
def test_bad_payload_is_refused_with_its_reason(payload: bytes, reason: str) -> None:
    """Every kind of bad input gets a RequestError whose sentence names what is wrong."""
    with pytest.raises(RequestError) as info:
        parse_request(payload, RULES)
    assert reason in str(info.value)


def test_rejection_keeps_a_valid_id() -> None:
    """A bad request with a good id is rejected under that id, so the sender can match it."""
    with pytest.raises(RequestError) as info:
        parse_request(b'{"text": "hi", "id": "req-1", "speed": 9}', RULES)
    assert info.value.request_id == "req-1"
    with pytest.raises(RequestError) as info:
        parse_request(b'{"text": "hi", "id": "bad id"}', RULES)
    assert info.value.request_id is None


def test_plain_text_and_full_json_parse() -> None:
    """Plain UTF-8 text is a request; every JSON field lands where the daemon reads it."""
    plain = parse_request("  Grüße, the door is open.\n".encode(), RULES)
    assert plain.text == "Grüße, the door is open." and not plain.id_given
    assert len(plain.id) == 32 and plain.priority == "normal" and plain.volume == 1.0
    full = parse_request(json.dumps({
        "text": "Hi", "id": "a-1:b.c_d", "voice": "joe", "speaker": "x", "speed": 1.5,
        "volume": 0, "priority": "critical", "output": "publish", "ttl_s": 2,
    }).encode(), RULES)
    assert full == Request(text="Hi", id="a-1:b.c_d", id_given=True, voice="joe", speaker="x",
                           speed=1.5, volume=0.0, priority="critical", output="publish",
                           ttl_s=2.0)
    assert full.rank == 0
    nulls = parse_request(b'{"text": "Hi", "voice": null, "speed": null, "id": null}', RULES)
    assert nulls.voice is None and nulls.speed is None and not nulls.id_given


def test_limits_follow_max_chars() -> None:
    """The byte bound scales with limits.max_chars, so a long allowed text is never cut."""
    rules = replace(RULES, max_chars=2000)
    text = "é" * 2000
    assert parse_request(json.dumps({"text": text}).encode(), rules).text == text  # \u escapes
    assert parse_request(text.encode(), rules).text == text


def test_control_is_json_or_a_bare_word_and_bad_ones_get_a_sentence() -> None:
    """Control requests: JSON or a bare word; bad ones get a sentence."""
    assert parse_control(b'{"action": "skip", "id": "c1"}').action == "skip"
    assert parse_control(b"stop\n").action == "stop"
    for payload, reason in [(b'{"action": "jump"}', "action is 'jump'"),
                            (b"{}", "'action' is missing"),
                            (b'{"action": "stop", "x": 1}', "unknown field 'x'"),
                            (b"\xff", "not valid UTF-8")]:
        with pytest.raises(RequestError, match=reason):
            parse_control(payload)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=10,
)
_fields = st.sampled_from(["text", "id", "voice", "speaker", "speed", "volume", "priority",
                           "output", "ttl_s", "other"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(str.encode),
    st.dictionaries(_fields, _json_values, max_size=6).map(lambda d: json.dumps(d).encode()),
))
def test_fuzz_parse_never_raises_anything_else(payload: bytes) -> None:
    """Random payloads give a Request or a RequestError, nothing else (no crash path)."""
    try:
        request = parse_request(payload, RULES)
    except RequestError as err:
        assert str(err)
    else:
        assert request.text.strip() and len(request.text) <= RULES.max_chars


# -- the link, against a real broker --------------------------------------------------------


class Recorder:
    """A LinkHandler that records what the link hands over (a real object, not a mock)."""

    def __init__(self) -> None:
        self.says: queue.Queue[tuple[bytes, Ticket]] = queue.Queue()
        self.controls: queue.Queue[bytes] = queue.Queue()
        self.connects: queue.Queue[bool] = queue.Queue()

    def on_say(self, payload: bytes, ticket: Ticket, origin: Origin | None = None) -> None:
        self.says.put((payload, ticket))

    def on_control(self, payload: bytes, ticket: Ticket) -> None:
        self.controls.put(payload)

    def on_connected(self, session_present: bool) -> None:
        self.connects.put(session_present)


def _config(port: int, prefix: str, **mqtt_fields: object) -> Config:
    fields = {"host": "127.0.0.1", "port": port, "topic_prefix": prefix,
              "client_id": f"link-{uuid.uuid4().hex[:8]}", "reconnect_min_s": 0.1,
              "reconnect_max_s": 0.3, **mqtt_fields}
    return Config(device_id="t", mqtt=MqttConfig(**fields))


def _client(port: int) -> mqtt.Client:
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"c-{uuid.uuid4().hex[:8]}",
                    protocol=MQTTProtocolVersion.MQTTv5)
    c.connect("127.0.0.1", port)
    c.loop_start()
    return c


def _collect(port: int, topic: str) -> tuple[mqtt.Client, queue.Queue]:
    got: queue.Queue = queue.Queue()
    ready = threading.Event()
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"s-{uuid.uuid4().hex[:8]}",
                    protocol=MQTTProtocolVersion.MQTTv5)
    c.on_message = lambda c, u, m: got.put((m.topic, m.payload, m.retain))
    c.on_subscribe = lambda *a: ready.set()
    c.connect("127.0.0.1", port)
    c.subscribe(topic, qos=1)
    c.loop_start()
    assert ready.wait(_TIMEOUT_S)
    return c, got


def test_topic_prefix_is_checked() -> None:
    """Wildcards in the prefix would subscribe to other devices' requests: refused at start."""
    for bad in ("edged/+", "a/#", "/"):
        with pytest.raises(ConfigError, match="mqtt.topic_prefix"):
            Topics(bad)


def test_link_starts_before_the_broker_and_acks_only_when_told(tmp_path: Path) -> None:
    """The daemon starts with the broker down, connects when it comes up, and a request it
    did not acknowledge is redelivered (dup) on its persistent session after a reconnect."""
    port = free_port()
    broker = Broker(tmp_path, f"listener {port} 127.0.0.1\nallow_anonymous true\n", [port])
    prefix = f"t/{uuid.uuid4().hex[:8]}"
    recorder = Recorder()
    config = _config(port, prefix)
    link = MqttLink(config, recorder, receive_maximum=5)
    link.start()  # broker still down: must not raise
    try:
        broker.start()
        assert recorder.connects.get(timeout=_TIMEOUT_S) is False
        pub = _client(port)
        pub.publish(f"{prefix}/say", b"one", qos=1).wait_for_publish(_TIMEOUT_S)
        pub.publish(f"{prefix}/say", b"two", qos=1).wait_for_publish(_TIMEOUT_S)
        (p1, t1), (p2, t2) = recorder.says.get(timeout=_TIMEOUT_S), recorder.says.get(
            timeout=_TIMEOUT_S)
        assert (p1, p2) == (b"one", b"two") and not t1.dup
        link.ack(t1)  # "two" stays unacknowledged
        link.stop()
        link = MqttLink(config, recorder, receive_maximum=5)
        link.start()
        assert recorder.connects.get(timeout=_TIMEOUT_S) is True  # session resumed
        payload, ticket = recorder.says.get(timeout=_TIMEOUT_S)
        assert (payload, ticket.dup, ticket.mid) == (b"two", True, t2.mid)
        link.ack(ticket)
        pub.loop_stop()
    finally:
        link.stop()
        broker.stop()


def test_oversized_audio_goes_out_in_parts_within_the_broker_limit(tmp_path: Path) -> None:
    """Audio larger than the broker's maximum packet size is split, never sent whole: an
    oversized QoS 1 publish would make paho reconnect and resend it forever."""
    port = free_port()
    broker = Broker(tmp_path, f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                    "max_packet_size 20000\n", [port]).start()
    prefix = f"t/{uuid.uuid4().hex[:8]}"
    recorder = Recorder()
    link = MqttLink(_config(port, prefix), recorder, receive_maximum=5)
    sub, got = _collect(port, f"{prefix}/audio/#")
    try:
        link.start()
        assert recorder.connects.get(timeout=_TIMEOUT_S) is False
        assert link.payload_limit(f"{prefix}/audio/x") < 20000
        rng = np.random.default_rng(1)
        audio = Audio(rng.integers(-3000, 3000, 50000).astype(np.int16), 16000)  # 100 KB
        sink = AudioSink(link, link.topics.audio("big"), stream=False)
        sink.add(audio)
        parts = sink.finish()
        assert parts >= 6 and sink.complete
        received = [got.get(timeout=_TIMEOUT_S) for _ in range(parts + 1)]
        topics = [t for t, _, _ in received]
        assert topics == [f"{prefix}/audio/big/{i}" for i in range(parts)] + [
            f"{prefix}/audio/big/end"]
        assert all(len(p) <= 20000 for _, p, _ in received)
        joined = np.concatenate([from_wav_bytes(p).samples for _, p, _ in received[:-1]])
        assert np.array_equal(joined, audio.samples)
        end = json.loads(received[-1][1])
        assert end == {"parts": parts, "frames": 50000, "rate_hz": 16000, "duration_ms": 3125}
        small = AudioSink(link, link.topics.audio("small"), stream=False)
        small.add(Audio(audio.samples[:1000], 16000))
        assert small.finish() == 1
        topic, payload, _ = got.get(timeout=_TIMEOUT_S)
        assert topic == f"{prefix}/audio/small" and len(from_wav_bytes(payload).samples) == 1000
        assert link.connected.is_set()  # no disconnect/resend loop happened
        assert "oversize packet" not in broker.log.read_text()  # "disconnected due to ..."
    finally:
        sub.loop_stop()
        link.stop()
        broker.stop()


def test_password_file_and_tls_files_are_checked(tmp_path: Path) -> None:
    """Unreadable secrets fail at start with the key named; the password never in the text."""
    recorder = Recorder()
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match="mqtt.password_file: cannot read"):
        MqttLink(_config(1883, "t/x", username="u", password_file=missing), recorder,
                 receive_maximum=3)
    secret = tmp_path / "pw"
    secret.write_text("s3cret-pw\n")
    with pytest.raises(ConfigError, match="mqtt.password_file: set without mqtt.username"):
        MqttLink(_config(1883, "t/x", password_file=secret), recorder, receive_maximum=3)
    with pytest.raises(ConfigError, match="mqtt.tls: cannot load") as info:
        MqttLink(_config(1883, "t/x", username="u", password_file=secret,
                         tls=TlsConfig(ca_file=missing)), recorder, receive_maximum=3)
    assert "s3cret" not in str(info.value)


def test_link_survives_a_broken_handler(broker: Broker, unique_prefix: str) -> None:
    """An exception in our handler never escapes the paho callback; the message is acked
    (it would crash us again on every redelivery) and the next one is served."""

    class Exploding(Recorder):
        def on_say(self, payload: bytes, ticket: Ticket, origin: Origin | None = None) -> None:
            if payload == b"boom":
                raise RuntimeError("handler bug")
            super().on_say(payload, ticket, origin)

    recorder = Exploding()
    link = MqttLink(_config(broker.port, unique_prefix), recorder, receive_maximum=3)
    link.start()
    try:
        assert recorder.connects.get(timeout=_TIMEOUT_S) is False
        pub = _client(broker.port)
        for payload in (b"boom", b"after"):
            pub.publish(f"{unique_prefix}/say", payload, qos=1).wait_for_publish(_TIMEOUT_S)
        assert recorder.says.get(timeout=_TIMEOUT_S)[0] == b"after"
        assert link.connected.is_set()
        pub.loop_stop()
    finally:
        link.stop()
