"""Home Assistant MQTT discovery, end to end: `edged run` as a subprocess and a real mosquitto.

What Home Assistant itself makes of the config (entities, their states, the notify template) is
checked against a real Home Assistant in test_homeassistant_real.py (`make test-ha`); here the
daemon's side: the exact retained config, removal, re-announcing, and that every command an entity
sends acts on the daemon.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pytest

from edged import __version__
from edged.audio import Audio, from_wav_bytes, with_volume
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.paths import DATA, EDGED, ROOT
from tests.harness.watcher import Message, Watcher

_TIMEOUT_S = 15.0


@pytest.fixture
def dp(broker: Broker) -> Iterator[Watcher]:
    """A watcher on a discovery prefix of this test's own (`<dp>/#`)."""
    w = Watcher(broker.port, f"ha-{uuid.uuid4().hex[:10]}")
    yield w
    w.close()


@pytest.fixture
def other_voice(tmp_path: Path, tiny_voice_path: Path) -> Path:
    """A second voice, `other`, in a voice folder (a copy of the tiny voice)."""
    folder = tmp_path / "voices"
    folder.mkdir()
    for suffix in ("", ".json"):
        shutil.copy(f"{tiny_voice_path}{suffix}", folder / f"other.onnx{suffix}")
    return folder


def _ha_daemon(make: Callable[..., DaemonProc], dp: Watcher, voices: Path | None = None,
               **homeassistant: Any) -> DaemonProc:
    more: dict[str, Any] = {"homeassistant": {"discovery_prefix": dp.prefix,
                                              "device_name": "Kitchen speaker", **homeassistant}}
    if voices is not None:
        more.update(voice={"dirs": [str(voices)]}, voices=["other"])
    return make(**more)


def _config_topic(dp: Watcher) -> str:
    return f"{dp.prefix}/device/test/config"


def _expected(p: str) -> dict[str, Any]:
    """The device config, written out (tests/data/ha_discovery_golden.json, with `<p>` for the
    topic prefix and `<version>` for edged's): what Home Assistant was seen to accept."""
    golden = (DATA / "ha_discovery_golden.json").read_text(encoding="utf-8")
    filled = json.loads(golden, object_hook=lambda d: {
        k: v.replace("<p>", p).replace("<version>", __version__) if isinstance(v, str) else v
        for k, v in d.items()})
    return dict(filled)


def _on(topic: str, payload: bytes | None = None) -> Callable[[Message], bool]:
    return lambda m: m.topic == topic and (payload is None or m.payload == payload)


def _state(w: Watcher, check: Callable[[dict], bool], start: int = 0) -> dict:
    topic = f"{w.prefix}/state"
    return w.wait(lambda m: m.topic == topic and check(m.json()), _TIMEOUT_S, start).json()


def test_the_device_config_is_published_retained_exactly(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, dp: Watcher,
        other_voice: Path, broker: Broker) -> None:
    """One retained config on <prefix>/device/<device_id>/config with every entity, each command
    at QoS 1, the availability topic, and the voices this device has; a client subscribing later
    (Home Assistant after a restart) gets it too."""
    _ha_daemon(make_daemon, dp, other_voice).start(watcher)
    got = dp.wait(_on(_config_topic(dp)), _TIMEOUT_S)
    assert got.json() == _expected(watcher.prefix)
    late = Watcher(broker.port, dp.prefix)
    try:
        again = late.wait(_on(_config_topic(dp)), _TIMEOUT_S)
    finally:
        late.close()
    assert again.retain and again.payload == got.payload


def test_discovery_off_removes_the_device(make_daemon: Callable[..., DaemonProc],
                                          watcher: Watcher, dp: Watcher) -> None:
    """homeassistant.discovery: false publishes the empty retained config (the device and its
    entities go away in Home Assistant) instead of the config."""
    first = _ha_daemon(make_daemon, dp).start(watcher)
    dp.wait(lambda m: m.topic == _config_topic(dp) and m.payload != b"", _TIMEOUT_S)
    first.stop()
    mark = dp.mark()
    second = make_daemon("off", homeassistant={"discovery_prefix": dp.prefix,
                                               "discovery": False})
    second.start(watcher)
    dp.wait(_on(_config_topic(dp), b""), _TIMEOUT_S, mark)
    assert all(m.payload == b"" for m in dp.messages[mark:] if m.topic == _config_topic(dp))


def test_edged_ha_remove_publishes_the_empty_config(make_daemon: Callable[..., DaemonProc],
                                                    watcher: Watcher, dp: Watcher) -> None:
    """`edged ha remove` removes the device with the daemon's broker settings, without taking
    over the daemon's session (the daemon stays connected)."""
    daemon = _ha_daemon(make_daemon, dp).start(watcher)
    dp.wait(lambda m: m.topic == _config_topic(dp) and m.payload != b"", _TIMEOUT_S)
    mark = watcher.mark()
    result = subprocess.run([*EDGED, "ha", "remove", "--config", str(daemon.path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert "removed device 'test'" in result.stdout
    dp.wait(_on(_config_topic(dp), b""), _TIMEOUT_S)
    watcher.say({"text": "Still connected.", "id": "after-remove"})
    assert watcher.final("after-remove")["event"] == "finished"
    assert not [m for m in watcher.messages[mark:] if m.payload == b"offline"]


def test_edged_ha_remove_without_a_broker_is_one_line(tmp_path: Path) -> None:
    """No broker at the configured address: one line on stderr, exit status 2."""
    config = tmp_path / "edged.yaml"
    config.write_text("mqtt: {host: 127.0.0.1, port: 1}\n")
    result = subprocess.run([*EDGED, "ha", "remove", "--config", str(config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=_TIMEOUT_S)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot connect to mqtt://127.0.0.1:1" in result.stderr


def test_home_assistant_coming_back_gets_the_config_again(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, dp: Watcher) -> None:
    """`online` on <discovery_prefix>/status (HA's birth message) makes the daemon publish its
    config, `online` and its state again; `offline` there changes nothing."""
    _ha_daemon(make_daemon, dp).start(watcher)
    dp.wait(_on(_config_topic(dp)), _TIMEOUT_S)
    mark, dmark = watcher.mark(), dp.mark()
    dp.publish("status", "offline")
    dp.publish("status", "online")
    dp.wait(_on(_config_topic(dp)), _TIMEOUT_S, dmark)
    watcher.online(mark)
    _state(watcher, lambda s: True, mark)
    assert len([m for m in dp.messages[dmark:] if m.topic == _config_topic(dp)]) == 1


def _render_notify(config: dict[str, Any], message: str) -> str:
    """Home Assistant's rendering of the notify command_template. Its `to_json` filter is
    orjson.dumps, which keeps non-ASCII as it is: json.dumps(ensure_ascii=False) writes the same
    JSON for strings. (The real HA renders it in test_homeassistant_real.py.)"""
    env = jinja2.Environment(autoescape=False)
    env.filters["to_json"] = lambda v: json.dumps(v, ensure_ascii=False)
    return env.from_string(config["cmps"]["announce"]["command_template"]).render(value=message)


def test_the_notify_template_round_trips_tricky_text_to_a_spoken_announcement(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, dp: Watcher) -> None:
    """Quotes, backslashes, braces, a newline and non-ASCII in a notify message come out of the
    template as a request the daemon speaks (finished), and the state's last announcement is the
    very text."""
    _ha_daemon(make_daemon, dp).start(watcher)
    config = dp.wait(_on(_config_topic(dp)), _TIMEOUT_S).json()
    message = 'He said "stop" \\ {now} — café, 5 °C,\nsecond line; 日本 ✓'
    mark = watcher.mark()
    watcher.say(_render_notify(config, message))
    finished = watcher.wait(lambda m: m.topic.endswith("/event") and m.json()["event"] in
                            ("finished", "failed", "rejected"), _TIMEOUT_S, mark).json()
    assert finished["event"] == "finished", finished
    state = _state(watcher, lambda s: (s.get("last") or {}).get("id") == finished["id"], mark)
    assert state["last"] == {"id": finished["id"], "text": message, "outcome": "finished"}
    assert state["last_uncached_first_audio_ms"] == finished["first_audio_ms"]
    assert state["cache_hit_ratio"] == 0.0


def test_buttons_and_the_pause_switch_act_on_the_daemon(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, dp: Watcher) -> None:
    """The payloads the entities send: pause holds the queue (state paused), clear empties it
    (failed: cleared), resume goes on; stop and skip are answered."""
    _ha_daemon(make_daemon, dp).start(watcher)
    config = dp.wait(_on(_config_topic(dp)), _TIMEOUT_S).json()["cmps"]
    topic = config["pause"]["command_topic"].removeprefix(f"{watcher.prefix}/")
    mark = watcher.mark()
    watcher.publish(topic, config["pause"]["payload_on"])
    _state(watcher, lambda s: s["paused"] is True, mark)
    watcher.say({"text": "Waiting.", "id": "held"})
    watcher.event("held", "queued")
    watcher.publish(topic, config["clear"]["payload_press"])
    assert "cleared" in watcher.final("held")["error"]
    mark = watcher.mark()
    watcher.publish(topic, config["pause"]["payload_off"])
    _state(watcher, lambda s: s["paused"] is False, mark)
    for button in ("stop", "skip"):
        mark = watcher.mark()
        watcher.publish(topic, config[button]["payload_press"])
        watcher.wait(lambda m, b=button: m.topic.endswith("/event") and
                     m.json().get("action") == b, _TIMEOUT_S, mark)


def _spoken(w: Watcher, request_id: str) -> Audio:
    w.say({"text": "Volume check, one two.", "id": request_id})
    assert w.final(request_id)["event"] == "finished"
    return from_wav_bytes(w.audio(request_id).payload)


def test_the_volume_number_scales_every_output_and_survives_a_restart(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, dp: Watcher) -> None:
    """A volume set from Home Assistant (its number sends "40.0") is in the state, scales the
    audio by the one volume rule, is saved in mqtt.state_dir and holds after a restart."""
    daemon = _ha_daemon(make_daemon, dp).start(watcher)
    full = _spoken(watcher, "loud")
    mark = watcher.mark()
    watcher.publish("set/volume", "40.0")
    _state(watcher, lambda s: s["volume"] == 40, mark)
    quiet = _spoken(watcher, "quiet")
    assert np.array_equal(quiet.samples, with_volume(full, 0.4).samples)
    daemon.stop()
    mark = watcher.mark()
    daemon.start(watcher)
    _state(watcher, lambda s: s["volume"] == 40, mark)
    assert json.loads((daemon.workdir / "state" / "device.json").read_text())["volume"] == 40


def test_the_voice_select_sets_the_voice_of_requests_without_one(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, dp: Watcher,
        other_voice: Path) -> None:
    """The select's option goes to <prefix>/set/voice: the state shows it, requests that name no
    voice are spoken with it, a request that names one keeps its own."""
    _ha_daemon(make_daemon, dp, other_voice).start(watcher)
    mark = watcher.mark()
    watcher.publish("set/voice", "other")
    _state(watcher, lambda s: s["selected_voice"] == "other", mark)
    watcher.say({"text": "Which voice?", "id": "v1"})
    assert watcher.final("v1")["voice"] == "other"
    watcher.say({"text": "Which voice?", "id": "v2", "voice": "tiny"})
    assert watcher.final("v2")["voice"] == "tiny"


@pytest.mark.parametrize(("suffix", "payload", "reason"), [
    ("set/volume", "loud", "volume must be a number from 0 to 100"),
    ("set/volume", "150", "it must be from 0 to 100"),
    ("set/volume", "nan", "volume must be a number"),
    ("set/voice", "nobody", "voice 'nobody' is not configured here"),
    ("set/voice", b"\xff\xfe", "not valid UTF-8"),
])
def test_a_bad_setting_is_rejected_with_its_reason(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, dp: Watcher, suffix: str,
        payload: str | bytes, reason: str) -> None:
    """A settings payload the daemon cannot take gets a `rejected` event saying why; the setting
    stays as it was."""
    daemon = _ha_daemon(make_daemon, dp).start(watcher)
    mark = watcher.mark()
    watcher.publish(suffix, payload)
    rejected = watcher.wait(lambda m: m.topic.endswith("/event") and
                            m.json()["event"] == "rejected", _TIMEOUT_S, mark).json()
    assert reason in rejected["error"] and suffix in rejected["error"]
    watcher.say({"text": "Still fine.", "id": "after"})
    assert watcher.final("after")["event"] == "finished"
    state = _state(watcher, lambda s: True, watcher.mark() - 1)
    assert (state["volume"], state["selected_voice"]) == (100, "tiny")
    assert daemon.alive()
