"""The daemon playing through a real PortAudio device (ALSA file sink, no sound card)."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest

from edged.audio import from_wav_bytes
from tests.harness.alsa_sink import install, install_none
from tests.harness.paths import EDGED, ROOT
from tests.harness.watcher import Watcher

_LONG = " ".join(f"Sentence number {i} of a long announcement that keeps going." for i in range(8))


def test_output_both_plays_and_publishes(make_daemon, watcher: Watcher,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """output: both: the announcement reaches the audio device and the WAV is published;
    `finished` reports the playback figures."""
    sink = install(tmp_path, monkeypatch, rate=16000)
    d = make_daemon(output="both").start(watcher)
    rid = f"p-{uuid.uuid4().hex[:6]}"
    watcher.say({"text": "Played and published.", "id": rid})
    done = watcher.final(rid, timeout=20)
    assert done["event"] == "finished", done
    assert isinstance(done["underruns"], int) and done["first_audio_ms"] > 0
    published = from_wav_bytes(watcher.audio(rid).payload)
    played = sink.samples()
    assert len(played) / sink.rate >= published.duration_s  # plus pre-roll silence
    assert np.abs(played).max() > 0
    assert d.alive()


def test_skip_interrupts_playback(make_daemon, watcher: Watcher,
                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`skip` stops the loudspeaker mid-announcement: the request fails as skipped long
    before its audio would have ended, and the next request plays normally."""
    install(tmp_path, monkeypatch, rate=16000)
    make_daemon(output="play").start(watcher)
    rid, after = f"p-{uuid.uuid4().hex[:6]}", f"p-{uuid.uuid4().hex[:6]}"
    watcher.say({"text": _LONG, "id": rid})
    started = watcher.event(rid, "started", timeout=20)
    assert watcher.control("skip")["affected"] == [rid]
    event = watcher.final(rid, timeout=10)
    assert event["event"] == "failed" and event["error"].startswith("skipped")
    assert event["ts"] - started["ts"] < 2.0  # the whole text is 5.4 s of audio
    watcher.say({"text": "Next one.", "id": after})
    assert watcher.final(after, timeout=20)["event"] == "finished"


def test_play_without_an_audio_device_fails_at_start(tmp_path: Path, tiny_voice_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """output: play on a machine with no sound device: one line naming the problem, exit 2."""
    install_none(tmp_path, monkeypatch)
    config = tmp_path / "edged.yaml"
    config.write_text(f"output: play\nvoice: {{name: {tiny_voice_path}}}\n"
                      f"cache: {{dir: {tmp_path / 'cache'}}}\n"
                      f"mqtt: {{state_dir: {tmp_path / 'state'}}}\n")
    result = subprocess.run([*EDGED, "run", "--config", str(config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("edged: audio: ") and "output: publish" in last


def test_no_device_with_fallback_publishes_instead(make_daemon, watcher: Watcher,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """audio.fallback_to_publish: with no device at all the daemon still starts, and each
    announcement it cannot play is published on MQTT, its `finished` event saying why."""
    install_none(tmp_path, monkeypatch)
    d = make_daemon(output="play", audio={"fallback_to_publish": True, "retries": 0}).start(watcher)
    rid = f"p-{uuid.uuid4().hex[:6]}"
    watcher.say({"text": "Nobody can hear this, so it goes out on MQTT.", "id": rid})
    done = watcher.final(rid, timeout=20)
    assert done["event"] == "finished", done
    assert done["fallback"].startswith("published instead of played")
    published = from_wav_bytes(watcher.audio(rid).payload)
    assert published.rate_hz == 16000
    assert abs(published.duration_s * 1000 - done["duration_ms"]) <= 1
    assert d.alive()
