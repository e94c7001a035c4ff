"""Against a real Home Assistant (`make test-ha`): the harness of tests/data/homeassistant runs HA
core and its mosquitto on loopback, for each of HA_VERSIONS (2025.4.4 on this host, 2026.11 in a
Debian sid root: tests/harness/ha_install.py); `edged run` joins that broker with the real default voice. HA
discovers the device, its entities act on the daemon, and HA's own Wyoming client speaks through
edged (the harness's check_wyoming_tts.py, 40-odd checks).

Marked long and ha: about a minute per version, plus the one-time installs `make test-ha` runs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import DaemonProc
from tests.harness.ha_install import HARNESS, Install, open_install, streams, versions
from tests.harness.paths import ROOT
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher

pytestmark = [pytest.mark.long, pytest.mark.ha]

_TIMEOUT_S = 60.0
_NODE = "kitchen"


class HomeAssistant:
    """HA's REST API from here; its websocket through the harness's client in HA's own venv."""

    def __init__(self, install: Install, state: dict[str, Any]) -> None:
        self.install = install
        self.version = install.version
        self.state = state
        self.url = state["ha_url"]
        self.token = Path(state["token_file"]).read_text().strip()

    def call(self, method: str, path: str, body: dict | None = None) -> Any:
        request = urllib.request.Request(
            self.url + path, method=method, data=json.dumps(body).encode() if body else None,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def service(self, domain: str, name: str, **data: Any) -> None:
        self.call("POST", f"/api/services/{domain}/{name}", data)

    def states(self) -> dict[str, dict[str, Any]]:
        return {s["entity_id"]: s for s in self.call("GET", "/api/states")}

    def ours(self) -> dict[str, str]:
        """unique_id -> entity_id of this device's entities, from the entity registry."""
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from hassclient import HA; "
                "print(json.dumps(HA.from_state().entity_registry()))")
        out = self.install.run("-c", code, str(HARNESS), timeout=60, check=True).stdout
        return {e["unique_id"]: e["entity_id"] for e in json.loads(out)
                if str(e.get("unique_id", "")).startswith(f"{_NODE}_")}

    def wait(self, what: str, check: Callable[[], Any], timeout: float = _TIMEOUT_S) -> Any:
        """Poll HA (it has no event we could wait on from here) until `check` gives something."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.25)
        raise AssertionError(f"Home Assistant: timed out waiting for {what}")

    def log_problems(self) -> list[str]:
        text = Path(self.state["hass_log"]).read_text(errors="replace")
        return [line for line in text.splitlines() if ("WARNING" in line or "ERROR" in line)
                and ("components.mqtt" in line or _NODE in line)]


@pytest.fixture(scope="module", params=versions())
def ha(request: pytest.FixtureRequest) -> Iterator[HomeAssistant]:
    """HA of each of HA_VERSIONS in turn, started with a fresh config, stopped after."""
    with open_install(request.param) as install:
        try:
            yield HomeAssistant(install, install.start())
        finally:
            install.stop()  # also after a failed start: what it started is recorded


@pytest.fixture(scope="module")
def edged(ha: HomeAssistant, tmp_path_factory: pytest.TempPathFactory, default_voice_path: Path,
          tiny_voice_path: Path, pulled_style: Path) -> Iterator[tuple[DaemonProc, Watcher]]:
    """`edged run` on HA's broker: the default voice, two more to select (a Piper one and the
    English Kokoro one, pulled by `make test-ha`), Wyoming on, in the memory issue 26 gives
    Kokoro beside Piper (`limits.memory_mb` 512)."""
    root = tmp_path_factory.mktemp("edged-ha")
    voices = root / "voices"
    (voices / "kokoro").mkdir(parents=True)
    for suffix in ("", ".json"):
        shutil.copy(f"{tiny_voice_path}{suffix}", voices / f"en_US-tiny-x_low.onnx{suffix}")
    shutil.copy(pulled_style, voices / "kokoro" / pulled_style.name)
    port = ha.state["mqtt_port"]
    prefix = f"edged/{_NODE}-{uuid.uuid4().hex[:6]}"
    watcher = Watcher(port, prefix)
    daemon = DaemonProc(root / "d", port, prefix, default_voice_path, device_id=_NODE,
                        voice={"dirs": [str(voices)]},
                        voices=["en_US-tiny-x_low", "kokoro:af_heart"],
                        limits={"memory_mb": 512},
                        homeassistant={"device_name": "Kitchen speaker"},
                        wyoming={"enabled": True, "port": free_port()})
    # A first start prepares the default voice: 20 s here, minutes on a loaded machine (beside
    # Home Assistant starting). `online` is the readiness awaited; the bound only ends a hang.
    daemon.start(watcher, timeout=900)
    yield daemon, watcher
    daemon.stop()
    watcher.close()


def _entities(ha: HomeAssistant) -> dict[str, str]:
    return ha.wait("the device's 19 entities", lambda: (e := ha.ours()) and len(e) == 19 and e)


def _available(ha: HomeAssistant, entity_id: str) -> dict[str, Any]:
    return ha.wait(f"{entity_id} available",
                   lambda: (s := ha.states().get(entity_id)) and s["state"] != "unavailable" and s)


def test_home_assistant_shows_the_device_and_its_entities(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """The entities HA made from the discovery config, by entity id, all available, and no
    warning or error from HA's MQTT integration about them."""
    entities = _entities(ha)
    assert sorted(entities.values()) == sorted([
        "notify.kitchen_speaker_announce", "sensor.kitchen_speaker_state",
        "sensor.kitchen_speaker_queue", "sensor.kitchen_speaker_last_announcement",
        "sensor.kitchen_speaker_last_announcement_id", "sensor.kitchen_speaker_cache_hit_ratio",
        "sensor.kitchen_speaker_first_audio_uncached", "button.kitchen_speaker_stop",
        "button.kitchen_speaker_skip", "button.kitchen_speaker_clear_queue",
        "switch.kitchen_speaker_pause", "select.kitchen_speaker_voice",
        "number.kitchen_speaker_volume", "event.kitchen_speaker_announcement",
        "binary_sensor.kitchen_speaker_quiet_hours", "sensor.kitchen_speaker_held_by_quiet_hours",
        "sensor.kitchen_speaker_time_of_day_volume", "sensor.kitchen_speaker_effective_volume",
        "binary_sensor.kitchen_speaker_clock_synchronized"])
    for entity_id in entities.values():
        _available(ha, entity_id)
    states = ha.states()
    for entity_id in sorted(entities.values()):  # what this HA shows (make test-ha's -rA)
        attributes = states[entity_id]["attributes"]
        print(f"HA {ha.version}: {entity_id} = {states[entity_id]['state']!r} "
              f"({attributes.get('friendly_name')!r})")
    assert states["sensor.kitchen_speaker_state"]["state"] == "idle"
    assert states["binary_sensor.kitchen_speaker_quiet_hours"]["state"] == "off"
    assert states["sensor.kitchen_speaker_time_of_day_volume"]["state"] == "100"
    assert states["select.kitchen_speaker_voice"]["attributes"]["options"] == [
        "en_US-joe-medium", "en_US-tiny-x_low", "kokoro:af_heart"]
    assert ha.log_problems() == []


def test_notify_from_home_assistant_makes_edged_speak(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """notify.send_message with quotes, a backslash, a newline and non-ASCII: edged speaks it
    (finished), and HA's last-announcement sensor shows the very text."""
    _daemon, watcher = edged
    _available(ha, "notify.kitchen_speaker_announce")
    message = 'Say "hi" \\ to café — 5 °C,\nthen stop.'
    mark = watcher.mark()
    ha.service("notify", "send_message", entity_id="notify.kitchen_speaker_announce",
               message=message)
    final = watcher.wait(lambda m: m.topic.endswith("/event") and
                         m.json()["event"] in ("finished", "failed", "rejected"), _TIMEOUT_S,
                         mark).json()
    assert final["event"] == "finished", final
    state = ha.wait("the last announcement", lambda: (s := ha.states())[
        "sensor.kitchen_speaker_last_announcement_id"]["state"] == final["id"] and s)
    assert state["sensor.kitchen_speaker_last_announcement"]["state"] == message
    assert float(state["sensor.kitchen_speaker_first_audio_uncached"]["state"]) > 0
    event = state["event.kitchen_speaker_announcement"]["attributes"]
    assert (event["event_type"], event["id"]) == ("finished", final["id"])


def _documented_payload_template() -> str:
    """The `payload:` template of the mqtt.publish example in docs/homeassistant.md."""
    doc = (ROOT / "docs" / "homeassistant.md").read_text()
    block = doc.split("payload: >-\n", 1)[1].split("```", 1)[0]
    return " ".join(line.strip() for line in block.splitlines() if line.strip())


def test_the_documented_critical_announcement_script_works(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """The docs' mqtt.publish example, rendered by HA's own template engine and published by HA,
    is a critical announcement that edged speaks."""
    _daemon, watcher = edged
    rendered = ha.call("POST", "/api/template", {"template": _documented_payload_template()})
    assert rendered["priority"] == "critical" and rendered["id"].startswith("smoke-")
    ha.service("mqtt", "publish", topic=f"{watcher.prefix}/say", qos=1,
               payload=json.dumps(rendered))
    assert watcher.event(rendered["id"], "queued", _TIMEOUT_S)["priority"] == "critical"
    assert watcher.final(rendered["id"], _TIMEOUT_S)["event"] == "finished"


def test_a_failed_announcement_is_an_event_in_home_assistant(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """What an automation reacts to: a notify message edged refuses (too long) becomes a
    `rejected` event on the event entity, with the reason."""
    _available(ha, "notify.kitchen_speaker_announce")
    ha.service("notify", "send_message", entity_id="notify.kitchen_speaker_announce",
               message="x" * 600)
    event = ha.wait("a rejected event", lambda: (a := ha.states()[
        "event.kitchen_speaker_announcement"]["attributes"])["event_type"] == "rejected" and a)
    assert "the limit is 500" in event["error"]


def test_switch_number_select_and_buttons_act_on_edged(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """Pause from HA pauses the queue (state paused); the volume and the voice set from HA are
    the daemon's; each button is answered by the daemon."""
    _daemon, watcher = edged
    _entities(ha)
    ha.service("switch", "turn_on", entity_id="switch.kitchen_speaker_pause")
    ha.wait("paused", lambda: ha.states()["sensor.kitchen_speaker_state"]["state"] == "paused")
    ha.service("switch", "turn_off", entity_id="switch.kitchen_speaker_pause")
    ha.wait("idle", lambda: ha.states()["sensor.kitchen_speaker_state"]["state"] == "idle")
    ha.service("number", "set_value", entity_id="number.kitchen_speaker_volume", value=30)
    ha.service("select", "select_option", entity_id="select.kitchen_speaker_voice",
               option="en_US-tiny-x_low")
    ha.wait("volume and voice", lambda: (s := ha.states())["number.kitchen_speaker_volume"][
        "state"] == "30" and s["select.kitchen_speaker_voice"]["state"] == "en_US-tiny-x_low")
    state = watcher.wait(lambda m: m.topic.endswith("/state") and m.json()["volume"] == 30 and
                         m.json()["selected_voice"] == "en_US-tiny-x_low", _TIMEOUT_S).json()
    assert state["paused"] is False
    for button, action in (("stop", "stop"), ("skip", "skip"), ("clear_queue", "clear")):
        mark = watcher.mark()
        ha.service("button", "press", entity_id=f"button.kitchen_speaker_{button}")
        watcher.wait(lambda m, a=action: m.topic.endswith("/event") and
                     m.json().get("action") == a, _TIMEOUT_S, mark)
    ha.service("select", "select_option", entity_id="select.kitchen_speaker_voice",
               option="en_US-joe-medium")
    ha.service("number", "set_value", entity_id="number.kitchen_speaker_volume", value=100)


def test_the_english_kokoro_voice_chosen_in_home_assistant_speaks(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """kokoro:af_heart picked in HA's voice select is the voice edged speaks HA's next
    announcement with (finished, naming it), within `limits.memory_mb` 512 beside Piper's."""
    _daemon, watcher = edged
    _entities(ha)
    ha.service("select", "select_option", entity_id="select.kitchen_speaker_voice",
               option="kokoro:af_heart")
    watcher.wait(lambda m: m.topic.endswith("/state") and
                 m.json()["selected_voice"] == "kokoro:af_heart", _TIMEOUT_S)
    try:
        mark = watcher.mark()
        ha.service("notify", "send_message", entity_id="notify.kitchen_speaker_announce",
                   message="The washing machine has finished.")
        # The first Kokoro request loads the model (prepared when the daemon started).
        final = watcher.wait(lambda m: m.topic.endswith("/event") and
                             m.json()["event"] in ("finished", "failed", "rejected"),
                             _TIMEOUT_S * 5, mark).json()
    finally:
        ha.service("select", "select_option", entity_id="select.kitchen_speaker_voice",
                   option="en_US-joe-medium")
    assert final["event"] == "finished", final
    assert final["voice"] == "kokoro:af_heart" and final["duration_ms"] > 500, final


@pytest.mark.parametrize("voice", ["en_US-joe-medium", "kokoro:af_heart"])
def test_home_assistant_speaks_through_edged_over_wyoming(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher], voice: str) -> None:
    """HA's Wyoming integration added by host and port; its tts entity lists edged's voices (the
    English Kokoro one among them) and the audio HA serves in the voice asked for is edged's,
    byte for byte (the harness's check_wyoming_tts.py)."""
    daemon, _watcher = edged
    port = daemon.config["wyoming"]["port"]
    result = ha.install.run(
        str(HARNESS / "check_wyoming_tts.py"), "--host", "127.0.0.1", "--port", str(port),
        "--voice", voice, "--language", "en_US")
    sys.stdout.write(result.stdout[-4000:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert ", 0 failed" in result.stdout


def test_an_assist_pipeline_streams_its_answer_to_edged(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """An Assist pipeline whose TTS engine is edged's Wyoming entity, run over HA's websocket
    from text through the TTS stage: HA streams the agent's answer to edged (synthesize-start,
    -chunk, -stop, seen by the harness's proxy), edged answers with audio and
    synthesize-stopped, and HA serves the audio (mp3 through ffmpeg, as a real installation)."""
    if not streams(ha.version):
        pytest.skip(f"HA {ha.version} has no streaming TTS for Wyoming (it came in 2025.7); "
                    "the other versions of HA_VERSIONS run this")
    daemon, _watcher = edged
    result = ha.install.run(
        str(HARNESS / "check_assist.py"), "--host", "127.0.0.1", "--port",
        str(daemon.config["wyoming"]["port"]), "--voice", "en_US-joe-medium")
    sys.stdout.write(result.stdout[-4000:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    report = json.loads((ha.install.dir / "assist.json").read_text())
    assert report["sent"][0] == "synthesize-start" and report["pcm_bytes"] > 0, report
    assert "Wyoming: first audio after" in daemon.log_text()


def test_edged_ha_remove_takes_the_device_out_of_home_assistant(
        ha: HomeAssistant, edged: tuple[DaemonProc, Watcher]) -> None:
    """`edged ha remove` (run last): HA drops the device's entities from its registry."""
    daemon, _watcher = edged
    _entities(ha)
    subprocess.run([sys.executable, "-m", "edged", "ha", "remove", "--config", str(daemon.path)],
                   cwd=ROOT, check=True, capture_output=True, timeout=60)
    ha.wait("the entities removed", lambda: not ha.ours())
