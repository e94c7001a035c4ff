"""What the device remembers beside its requests: the settings a person changes at run time (volume,
selected voice: persisted in `mqtt.state_dir`), and the outcome of its last announcements (for
`<p>/state`, so Home Assistant's entities can show them).

    settings = DeviceSettings.load(state_dir / "device.json", voices)   # a damaged file: defaults
    settings.set_volume(40); settings.set_voice("en_US-joe-medium")      # SettingError, else saved
    volume = request.volume * settings.volume_factor                     # every output
    recent.record(text, event) -> recent.last()                          # last id/text/outcome
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..files import atomic_write
from .events import Failed, Finished

_LOGGER = logging.getLogger(__name__)
_MAX_FILE_BYTES: Final = 4096
_CLOSE_S: Final = 5.0
_SAVE_EVERY_S: Final = 1.0
_STATE_TEXT_CHARS: Final = 200
"""The last announcement's text in `<p>/state` is cut here: the state is retained and published on
every change, and Home Assistant keeps at most 255 characters in a sensor's state."""


class SettingError(ValueError):
    """A setting cannot take that value; the message says why (safe to publish)."""


class DeviceSettings:
    """Thread-safe; the device volume (0-100) and the voice used when a request names none.

    A change holds at once; it is saved by a thread of its own ("edged-settings"), at most
    once a second, the latest values: the settings topics are handled on paho's network thread,
    and two fsyncs per change there held every other request back (3,000 changes: requests
    5-46 s late). `close` saves what is pending (the daemon closes it when it stops)."""

    def __init__(self, path: Path | None, voices: Collection[str], *, volume: int = 100,
                 voice: str | None = None) -> None:
        self._path = path
        self._voices = frozenset(voices)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._volume = volume
        self._voice = voice
        self._dirty = False
        self._closed = False
        self._saver: threading.Thread | None = None

    @classmethod
    def load(cls, path: Path, voices: Collection[str]) -> DeviceSettings:
        """The settings saved at `path`; defaults (with one warning) when it is missing or bad."""
        settings = cls(path, voices)
        try:
            with path.open("rb") as f:
                raw = f.read(_MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return settings
        except OSError as err:
            _LOGGER.warning("Cannot read %s (%s); volume 100, the configured voice", path, err)
            return settings
        try:
            if len(raw) > _MAX_FILE_BYTES:
                raise SettingError(f"larger than {_MAX_FILE_BYTES} bytes")
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise SettingError("not a JSON object")
            settings._volume = _volume(data.get("volume", 100))
            voice = data.get("voice")
            settings._voice = voice if isinstance(voice, str) and voice in settings._voices else None
            if voice is not None and settings._voice is None:
                _LOGGER.warning("%s: voice %r is not configured any more; using the configured "
                                "voice", path, voice)
        except (ValueError, SettingError) as err:
            _LOGGER.warning("%s is damaged (%s); volume 100, the configured voice", path, err)
            return cls(path, voices)
        return settings

    @property
    def volume(self) -> int:
        with self._lock:
            return self._volume

    @property
    def volume_factor(self) -> float:
        """What every output's samples are multiplied by (with the request's own volume)."""
        return self.volume / 100

    @property
    def voice(self) -> str | None:
        """The voice selected for this device; None: the configured one."""
        with self._lock:
            return self._voice

    def set_volume(self, value: object) -> int:
        volume = _volume(value)
        with self._lock:
            self._volume = volume
            self._to_save()
        return volume

    def set_voice(self, name: str | None) -> None:
        if name is not None and name not in self._voices:
            raise SettingError(f"voice {name[:40]!r} is not configured here; configured voices: "
                               f"{', '.join(sorted(self._voices))}")
        with self._lock:
            self._voice = name
            self._to_save()

    def close(self) -> None:
        """Save what is pending, then stop saving (changes after this are not saved)."""
        with self._lock:
            self._closed = True
            self._changed.notify()
            saver = self._saver
        if saver is not None:
            saver.join(_CLOSE_S)

    def _to_save(self) -> None:
        """Lock held: the saver writes the latest values soon."""
        if self._path is None or self._closed:
            return
        self._dirty = True
        if self._saver is None:
            self._saver = threading.Thread(target=self._save_changes, name="edged-settings",
                                           daemon=True)
            self._saver.start()
        self._changed.notify()

    def _save_changes(self) -> None:
        assert self._path is not None
        while True:
            with self._lock:
                self._changed.wait_for(lambda: self._dirty or self._closed)
                if not self._dirty:
                    return
                # Changes in a burst (a slider dragged, a flood) are saved once, a second later.
                self._changed.wait_for(lambda: self._closed, _SAVE_EVERY_S)
                self._dirty = False
                data = json.dumps({"volume": self._volume, "voice": self._voice})
            try:  # a failed save is logged: the new value holds until the next restart
                self._path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(self._path, data + "\n")
            except OSError as err:
                _LOGGER.warning("Cannot save the device settings to %s: %s", self._path, err)


def _volume(value: object) -> int:
    """0-100 from a number or its text ("40", "40.0": what Home Assistant's number sends)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            value = float(value.strip()) if len(value) <= 32 else None
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SettingError(f"volume must be a number from 0 to 100, got {str(value)[:40]!r}")
    if not 0 <= value <= 100:
        raise SettingError(f"volume is {value:g}; it must be from 0 to 100")
    return round(value)


@dataclass(frozen=True)
class Last:
    """The last announcement, as `<p>/state` shows it (Home Assistant's sensor)."""

    id: str
    text: str
    outcome: str
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"id": self.id, "text": self.text, "outcome": self.outcome}
        return data if self.error is None else {**data, "error": self.error}


class Recent:
    """Thread-safe; the last announcement's outcome and the last uncached one's first-audio time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: Last | None = None
        self._first_audio_ms: float | None = None

    def record(self, text: str, event: Finished | Failed) -> None:
        shown = text if len(text) <= _STATE_TEXT_CHARS else text[:_STATE_TEXT_CHARS - 1] + "…"
        last = Last(event.id, shown, event.kind,
                    event.error if isinstance(event, Failed) else None)
        with self._lock:
            self._last = last
            if isinstance(event, Finished) and not event.cached and event.first_audio_ms is not None:
                self._first_audio_ms = event.first_audio_ms

    def last(self) -> tuple[Last | None, float | None]:
        """(the last announcement, the last uncached one's first audio in ms)."""
        with self._lock:
            return self._last, self._first_audio_ms
