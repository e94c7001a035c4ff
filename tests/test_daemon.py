"""End to end: `edged run` as a subprocess, a real mosquitto, the tiny voice, output: publish."""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edged.audio import from_wav_bytes
from tests.harness.broker import Broker
from tests.harness.cases import BAD_PAYLOADS
from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher

_RATE = 16000  # the tiny voice's sample rate
_QUEUE = 4


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, tiny_voice_path: Path) -> Iterator:
    """One broker + one daemon (limits.queue 4) for the tests that can share them."""
    root = tmp_path_factory.mktemp("shared")
    port = free_port()
    broker = Broker(root / "broker", f"listener {port} 127.0.0.1\nallow_anonymous true\n",
                    [port]).start()
    prefix = f"edged-test/{uuid.uuid4().hex[:12]}"
    w = Watcher(port, prefix)
    daemon = DaemonProc(root / "daemon", port, prefix, tiny_voice_path,
                        limits={"queue": _QUEUE, "max_chars": 500}).start(w)
    yield SimpleNamespace(watcher=w, daemon=daemon, prefix=prefix, port=port)
    daemon.stop()
    w.close()
    broker.stop()


@pytest.fixture
def sw(shared: SimpleNamespace) -> Iterator[Watcher]:
    """The shared watcher; afterwards the shared daemon must still be alive."""
    yield shared.watcher
    assert shared.daemon.alive(), shared.daemon.log_text()[-3000:]


def _rid() -> str:
    return f"r-{uuid.uuid4().hex[:10]}"


def _kinds(w: Watcher, request_id: str) -> list[str]:
    return [e["event"] for e in w.events(request_id)]


def test_request_gives_events_in_order_and_a_wav(sw: Watcher) -> None:
    """publish -> queued, started, finished (with timings) -> a 16-bit mono WAV at the voice's
    rate whose length matches the reported duration."""
    rid = _rid()
    sw.say({"text": "Hello world. This is a test.", "id": rid})
    done = sw.final(rid)
    assert _kinds(sw, rid) == ["queued", "started", "finished"]
    assert done["cached"] is False and done["synth_ms"] >= 0 and done["first_audio_ms"] > 0
    for event in sw.events(rid):
        assert isinstance(event["ts"], float)
    audio = from_wav_bytes(sw.audio(rid).payload)
    assert audio.rate_hz == _RATE
    assert 0.1 < audio.duration_s < 10
    assert abs(audio.duration_s * 1000 - done["duration_ms"]) <= 1
    assert np.abs(audio.samples).max() > 0


def test_plain_text_payload_is_a_request_with_a_generated_id(sw: Watcher) -> None:
    """A plain UTF-8 payload is a request; its events carry a generated id."""
    mark = sw.mark()
    sw.say("The washing machine is done.")
    queued = sw.wait(lambda m: m.topic.endswith("/event") and m.json()["event"] == "queued",
                     start=mark).json()
    rid = queued["id"]
    assert len(rid) == 32
    assert sw.final(rid)["event"] == "finished"
    assert from_wav_bytes(sw.audio(rid).payload).rate_hz == _RATE


def test_second_request_is_served_from_the_cache(sw: Watcher) -> None:
    """The same text twice: the second reports cached: true and publishes the same audio."""
    text = f"Cache check number {uuid.uuid4().int % 1000}."
    first, second = _rid(), _rid()
    sw.say({"text": text, "id": first})
    assert sw.final(first)["cached"] is False
    sw.say({"text": text, "id": second})
    done = sw.final(second)
    assert done["cached"] is True and done["synth_ms"] == 0
    assert sw.audio(first).payload == sw.audio(second).payload


# Payloads over the MQTT 5 Maximum Packet Size the daemon announces never reach it (the broker
# drops them: see test_hardening.py); the rest are answered on the wire.
_WIRE_BAD = [(p, r) for p, r in BAD_PAYLOADS
             if "configured voices" not in r and len(p) < 8000] + [
    (b'{"text": "hi", "voice": "en_US-lessac-high"}', "unknown voice 'en_US-lessac-high'"),
    (b'{"text": "hi", "speaker": "bob"}', "has one speaker"),
    (b'{"text": "hi", "output": "play"}', "output 'play' is not available here"),
]


def test_bad_payloads_are_rejected_and_the_next_request_is_served(sw: Watcher) -> None:
    """Each bad payload gets exactly one `rejected` event naming its reason; the daemon
    stays up and serves the next good request normally."""
    for payload, reason in _WIRE_BAD:
        mark = sw.mark()
        sw.say(payload)
        event = sw.wait(lambda m: m.topic.endswith("/event"), start=mark).json()
        assert event["event"] == "rejected", (payload[:40], event)
        assert reason in event["error"], (payload[:40], event)
    rid = _rid()
    sw.say({"text": "Still here.", "id": rid, "speed": 1.2})
    assert sw.final(rid)["event"] == "finished"


def test_rejection_carries_the_request_id(sw: Watcher) -> None:
    """A request with a valid id but a bad field is rejected under its own id."""
    rid = _rid()
    sw.say({"text": "x" * 2400, "id": rid})
    event = sw.final(rid)
    assert event["event"] == "rejected"
    assert event["error"] == "text is 2400 characters; the limit is 500"


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.binary(max_size=200),
    st.text(max_size=120).map(str.encode),
    st.dictionaries(
        st.sampled_from(["text", "id", "speed", "volume", "priority", "ttl_s", "speaker", "x"]),
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
        max_size=5,
    ).map(lambda d: json.dumps(d).encode()),
))
def test_fuzz_random_payloads_leave_the_daemon_answering(sw: Watcher, payload: bytes) -> None:
    """Whatever arrives, the daemon answers it (queued or rejected) and keeps serving."""
    mark = sw.mark()
    sw.say(payload)
    ping = _rid()
    sw.say({"text": "Ping.", "id": ping})
    assert sw.final(ping)["event"] == "finished"
    answers = [m.json() for m in sw.messages[mark:] if m.topic.endswith("/event")]
    first = next(e for e in answers if e["id"] != ping)
    assert first["event"] in ("queued", "rejected")


def test_full_queue_answers_busy(sw: Watcher) -> None:
    """limits.queue requests wait; the next is rejected with "busy"; the waiting ones finish."""
    sw.control("pause")
    try:
        ids = [_rid() for _ in range(_QUEUE + 1)]
        for rid in ids[:-1]:
            sw.say({"text": "Waiting.", "id": rid})
            sw.event(rid, "queued")
        sw.say({"text": "One too many.", "id": ids[-1]})
        busy = sw.final(ids[-1])
        assert busy["event"] == "rejected" and busy["error"].startswith("busy")
    finally:
        sw.control("resume")
    for rid in ids[:-1]:
        assert sw.final(rid)["event"] == "finished"


def test_priorities_order_the_queue(sw: Watcher) -> None:
    """Waiting requests start best priority first, then in arrival order."""
    sw.control("pause")
    order = [("low", "low"), ("n1", "normal"), ("high", "high"), ("n2", "normal")]
    ids = {name: _rid() for name, _ in order}
    try:
        for name, priority in order:
            sw.say({"text": f"Priority {priority}.", "id": ids[name], "priority": priority})
            sw.event(ids[name], "queued")
    finally:
        sw.control("resume")
    for rid in ids.values():
        sw.final(rid)
    started = [e["id"] for e in sw.events() if e["event"] == "started" and e["id"] in
               ids.values()]
    assert started == [ids["high"], ids["n1"], ids["n2"], ids["low"]]


def test_critical_jumps_a_full_queue(sw: Watcher) -> None:
    """A critical request is never turned away for queued chit-chat: it displaces the worst
    waiting request, which gets its one final event (failed), and it is spoken first."""
    sw.control("pause")
    low = [_rid() for _ in range(_QUEUE)]
    crit = _rid()
    try:
        for rid in low:
            sw.say({"text": "Chit chat.", "id": rid, "priority": "low"})
            sw.event(rid, "queued")
        sw.say({"text": "Smoke alarm.", "id": crit, "priority": "critical"})
        dropped = sw.final(low[-1])
        assert dropped["event"] == "failed" and "to make room for critical" in dropped["error"]
    finally:
        sw.control("resume")
    assert sw.final(crit)["event"] == "finished"
    for rid in low[:-1]:
        assert sw.final(rid)["event"] == "finished"
    started = [e["id"] for e in sw.events() if e["event"] == "started" and e["id"] in
               [crit, *low]]
    assert started[0] == crit and low[-1] not in started


def test_expired_request_fails_when_its_turn_comes(sw: Watcher) -> None:
    """A request older than its ttl_s when its turn comes is dropped with `failed`."""
    sw.control("pause")
    short, normal = _rid(), _rid()
    try:
        sw.say({"text": "Too late.", "id": short, "ttl_s": 0.2})
        sw.say({"text": "On time.", "id": normal})
        sw.event(normal, "queued")
        time.sleep(0.4)  # the thing under test is time passing in the queue
    finally:
        sw.control("resume")
    failed = sw.final(short)
    assert failed["event"] == "failed" and failed["error"].startswith("expired: waited")
    assert "ttl_s is 0.2 s" in failed["error"]
    assert sw.final(normal)["event"] == "finished"
    assert "started" not in _kinds(sw, short)


def test_clear_control_fails_waiting_requests(sw: Watcher) -> None:
    """`clear` ends every waiting request with `failed`, and answers with the ids it ended."""
    sw.control("pause")
    ids = [_rid(), _rid()]
    try:
        for rid in ids:
            sw.say({"text": "Soon cleared.", "id": rid})
            sw.event(rid, "queued")
        answer = sw.control("clear")
    finally:
        sw.control("resume")
    assert answer["action"] == "clear" and answer["affected"] == ids
    for rid in ids:
        event = sw.final(rid)
        assert event["event"] == "failed" and event["error"].startswith("cleared")
    bad = sw.mark()
    sw.publish("control", b'{"action": "explode"}')
    rejected = sw.wait(lambda m: m.topic.endswith("/event"), start=bad).json()
    assert rejected["event"] == "rejected" and "action is 'explode'" in rejected["error"]


def test_an_id_already_finished_is_not_spoken_twice(sw: Watcher) -> None:
    """A publisher's retry of a finished id is not queued, started or spoken again (no new
    audio: exactly-once speech); it gets the final event once more, marked `repeat`, with the
    original's kind and ts, so a client that missed the answer learns it."""
    rid = _rid()
    sw.say({"text": "Only once.", "id": rid})
    first = sw.final(rid)
    sw.say({"text": "Only once.", "id": rid})
    ping = _rid()
    sw.say({"text": "Ping.", "id": ping})
    sw.final(ping)
    events = sw.events(rid)
    assert [e["event"] for e in events if not e.get("repeat")] == ["queued", "started",
                                                                    "finished"]
    repeats = [e for e in events if e.get("repeat")]
    assert len(repeats) == 1 and repeats[0]["event"] == "finished"
    assert repeats[0]["ts"] == first["ts"] and repeats[0]["device_id"] == first["device_id"]
    audio_topic = f"{sw.prefix}/audio/{rid}"
    assert sum(m.topic == audio_topic for m in sw.messages) == 1


def test_volume_scales_the_published_audio(sw: Watcher) -> None:
    """volume 0.0 publishes silence of the same length; the cache keeps the full audio."""
    loud, quiet = _rid(), _rid()
    sw.say({"text": "Volume check.", "id": loud})
    sw.say({"text": "Volume check.", "id": quiet, "volume": 0.0})
    sw.final(quiet)
    a, b = (from_wav_bytes(sw.audio(r).payload) for r in (loud, quiet))
    assert len(a.samples) == len(b.samples) and np.abs(a.samples).max() > 0
    assert not b.samples.any()


def test_state_is_retained_and_complete(sw: Watcher, shared: SimpleNamespace) -> None:
    """<prefix>/state is retained JSON with state, queue, voice, cache stats and version."""
    late = Watcher(shared.port, shared.prefix)  # a late subscriber gets the retained one
    try:
        state = late.wait(lambda m: m.topic.endswith("/state") and m.retain).json()
        online = late.wait(lambda m: m.topic.endswith("/availability") and m.retain)
    finally:
        late.close()
    assert online.payload == b"online"
    assert state["state"] in ("idle", "speaking") and isinstance(state["queue"], int)
    assert state["voice"] == "tiny" and state["version"] and "entries" in state["cache"]


# -- daemons of their own -------------------------------------------------------------------


def test_sigterm_exits_zero_and_goes_offline(make_daemon, watcher: Watcher) -> None:
    """SIGTERM: clean exit 0 within the stop timeout, retained availability `offline`."""
    d = make_daemon().start(watcher)
    mark = watcher.mark()
    d.signal(signal.SIGTERM)
    assert d.wait(10) == 0
    watcher.offline(mark)
    assert "Traceback" not in d.log_text()


def test_sighup_reloads_a_valid_config_and_keeps_a_bad_one_out(
        make_daemon, watcher: Watcher) -> None:
    """SIGHUP with a broken config changes nothing; with a valid one the daemon re-executes
    (same PID) with the new settings."""
    d = make_daemon().start(watcher)
    pid = d.proc.pid
    d.path.write_text("limits: {queue: many}\n")
    d.signal(signal.SIGHUP)
    wait_log(d, "Reload refused")
    rid = _rid()
    watcher.say({"text": "Twenty characters ok.", "id": rid})
    assert watcher.final(rid)["event"] == "finished"
    d.config["limits"]["max_chars"] = 10
    mark = watcher.mark()
    d.write()
    d.signal(signal.SIGHUP)
    watcher.offline(mark)
    watcher.online(mark, timeout=30)
    rid = _rid()
    watcher.say({"text": "Twenty characters ok.", "id": rid})
    event = watcher.final(rid)
    assert event["event"] == "rejected" and "the limit is 10" in event["error"]
    assert d.proc.pid == pid and d.alive()


def test_large_audio_goes_out_in_parts(make_daemon, watcher: Watcher) -> None:
    """Audio bigger than mqtt.max_payload_bytes arrives as ordered WAV parts plus an end
    marker, and the parts join to the whole announcement."""
    d = make_daemon(mqtt={"max_payload_bytes": 4096}).start(watcher)
    rid = _rid()
    watcher.say({"text": "This announcement is long enough to need several parts.", "id": rid})
    done = watcher.final(rid)
    assert done["event"] == "finished" and done["audio_parts"] > 1
    end = watcher.wait(lambda m: m.topic == f"{watcher.prefix}/audio/{rid}/end").json()
    assert end["parts"] == done["audio_parts"] and end["rate_hz"] == _RATE
    parts = [watcher.wait(lambda m, i=i: m.topic == f"{watcher.prefix}/audio/{rid}/{i}")
             for i in range(end["parts"])]
    assert all(len(p.payload) <= 4096 for p in parts)
    frames = sum(len(from_wav_bytes(p.payload).samples) for p in parts)
    assert frames == end["frames"] and abs(frames / _RATE * 1000 - done["duration_ms"]) <= 1
    assert d.alive()


def test_a_retained_request_is_not_replayed(make_daemon, watcher: Watcher) -> None:
    """A request published with retain (a publisher's mistake) must not be spoken again on
    every start or reconnect: the daemon subscribes without retained messages."""
    watcher.publish("say", {"text": "Stale retained request.", "id": "stale"}, retain=True)
    make_daemon().start(watcher)
    ping = _rid()
    watcher.say({"text": "Ping.", "id": ping})
    assert watcher.final(ping)["event"] == "finished"
    assert watcher.events("stale") == []


def test_a_configured_extra_voice_is_served_and_others_refused(
        make_daemon, watcher: Watcher, tmp_path: Path) -> None:
    """`voices:` names the other voices a request may ask for: one loads on first use and
    speaks at its own rate; a voice not configured is rejected by name (never a path)."""
    from tests.harness.tiny_voice import make_tiny_voice

    extra = make_tiny_voice(tmp_path / "extra" / "second.onnx")
    cfg = json.loads(Path(f"{extra}.json").read_text())
    cfg["audio"]["sample_rate"] = 8000
    Path(f"{extra}.json").write_text(json.dumps(cfg))
    d = make_daemon(voices=["second"], voice={"dirs": [str(extra.parent)]}).start(watcher)
    rid = _rid()
    watcher.say({"text": "Hello from the other voice.", "id": rid, "voice": "second"})
    assert watcher.final(rid)["event"] == "finished"
    assert from_wav_bytes(watcher.audio(rid).payload).rate_hz == 8000
    bad = _rid()
    watcher.say({"text": "Hi.", "id": bad, "voice": "/etc/passwd"})
    rejected = watcher.final(bad)
    assert rejected["event"] == "rejected" and "voice" in rejected["error"]
    assert d.alive()
