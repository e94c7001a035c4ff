"""The device's run-time settings (volume, selected voice: saved in mqtt.state_dir) and its record
of the last announcement (for <prefix>/state)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from edged.daemon.device_state import DeviceSettings, Recent, SettingError
from edged.daemon.events import Failed, Finished

_VOICES = ("en_US-joe-medium", "other")


def test_settings_are_saved_and_read_back(tmp_path: Path) -> None:
    """What Home Assistant sets holds after a restart (the daemon closes its settings when it
    stops: what is pending is saved)."""
    path = tmp_path / "state" / "device.json"
    settings = DeviceSettings.load(path, _VOICES)
    assert (settings.volume, settings.voice) == (100, None)
    settings.set_volume("40.0")
    settings.set_voice("other")
    settings.close()  # saved by its own thread: what stopping the daemon waits for
    again = DeviceSettings.load(path, _VOICES)
    assert (again.volume, again.voice, again.volume_factor) == (40, "other", 0.4)


@pytest.mark.parametrize("content", [b"{not json", b"[1]", b'{"volume": 400}', b"x" * 5000,
                                     b'{"volume": "loud"}'])
def test_a_damaged_file_gives_the_defaults_and_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes) -> None:
    """A settings file that cannot be used never stops the daemon: defaults, one warning."""
    path = tmp_path / "device.json"
    path.write_bytes(content)
    caplog.set_level(logging.WARNING)
    settings = DeviceSettings.load(path, _VOICES)
    assert (settings.volume, settings.voice) == (100, None)
    assert len(caplog.records) == 1 and "damaged" in caplog.records[0].getMessage()


def test_a_voice_no_longer_configured_falls_back_to_the_configured_one(tmp_path: Path) -> None:
    """A saved voice that the config no longer offers is not used (it could not be spoken)."""
    path = tmp_path / "device.json"
    path.write_text(json.dumps({"volume": 70, "voice": "gone"}))
    settings = DeviceSettings.load(path, _VOICES)
    assert (settings.volume, settings.voice) == (70, None)


@pytest.mark.parametrize(("value", "error"), [
    ("101", "it must be from 0 to 100"), (-1, "it must be from 0 to 100"),
    ("inf", "must be a number"), (True, "must be a number"), ("", "must be a number"),
    ("1" * 40, "must be a number"),
])
def test_bad_volumes_are_refused_with_the_reason(value: object, error: str) -> None:
    """Volume is 0-100; anything else is a SettingError saying so, and nothing changes."""
    settings = DeviceSettings(None, _VOICES, volume=55)
    with pytest.raises(SettingError, match=error):
        settings.set_volume(value)
    assert settings.volume == 55


def test_an_unknown_voice_is_refused() -> None:
    """Only the voices the device has can be selected; None goes back to the configured one."""
    settings = DeviceSettings(None, _VOICES, voice="other")
    with pytest.raises(SettingError, match="not configured here; configured voices: "
                                           "en_US-joe-medium, other"):
        settings.set_voice("nobody")
    settings.set_voice(None)
    assert settings.voice is None


def test_recent_keeps_the_last_outcome_and_the_last_uncached_first_audio() -> None:
    """The last announcement (any outcome) and the first-audio time of the last one that was
    synthesized: a cached one after it does not hide that figure."""
    recent = Recent()
    assert recent.last() == (None, None)
    recent.record("Hello.", Finished("a", cached=False, first_audio_ms=180.0))
    recent.record("Hello.", Finished("b", cached=True, first_audio_ms=9.0))
    last, first_audio_ms = recent.last()
    assert last is not None and first_audio_ms == 180.0
    assert last.to_json() == {"id": "b", "text": "Hello.", "outcome": "finished"}
    recent.record("x" * 300, Failed("c", error="cleared"))
    last, _ = recent.last()
    assert last is not None and last.outcome == "failed" and last.error == "cleared"
    assert len(last.text) == 200 and last.text.endswith("…")
