"""PortAudio: the output devices, the one stream a player writes to, and reopening it.

PortAudio is process-global: re-initializing it (to see a speaker plugged in after start) closes
every open stream, so the lock and the count of open streams live in one object per process,
`PORTAUDIO`. A device failing mid-announcement (USB unplugged, ALSA xrun that does not recover)
is reopened with backoff by `Device.reopen`; the player decides what that means for the
announcement.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..config import AudioConfig

_LOGGER = logging.getLogger(__name__)


class PlayerError(Exception):
    """No usable output device, or the device failed; the message names it."""


class Aborted(Exception):
    """The announcement was interrupted while the device was being reopened."""


@dataclass(frozen=True)
class OutputDevice:
    index: int
    name: str
    hostapi: str
    channels: int
    default_rate_hz: int
    default: bool


class PortAudio:
    """The process's PortAudio library; use `PORTAUDIO`. Thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        """(Re)initialization and device queries are not thread-safe against each other."""
        self._open_streams = 0

    def module(self) -> Any:
        """The sounddevice module; PlayerError when libportaudio2 is missing."""
        try:
            import sounddevice
        except OSError as err:  # the wheel is there, libportaudio2 is not
            raise PlayerError(f"PortAudio is not available ({err}); install libportaudio2") from None
        return sounddevice

    def refresh(self) -> None:
        """Enumerate devices again (PortAudio only looks at start): sees a replugged speaker.
        A no-op while a stream is open, which re-initializing would close."""
        sd = self.module()
        with self.lock:
            if self._open_streams == 0 and hasattr(sd, "_terminate") and hasattr(sd, "_initialize"):
                sd._terminate()
                sd._initialize()

    def list_devices(self, refresh: bool = False) -> list[OutputDevice]:
        sd = self.module()
        with self.lock:
            if refresh:
                self.refresh()
            apis = sd.query_hostapis()
            default = sd.default.device[1]
            return [OutputDevice(d["index"], d["name"], apis[d["hostapi"]]["name"],
                                 d["max_output_channels"], int(d["default_samplerate"]),
                                 d["index"] == default)
                    for d in sd.query_devices() if d["max_output_channels"] > 0]

    def resolve(self, wanted: str | None) -> OutputDevice:
        """The configured device (index or name substring; None: the default)."""
        devices = self.list_devices()
        said = f"audio.device is {wanted!r}" if wanted is not None else "audio.device is not set"
        if not devices:
            raise PlayerError(f"no audio output device ({said}); PortAudio sees none: check that "
                              "`aplay -l` lists a card and the user is in the 'audio' group")
        if wanted is None:
            chosen = [d for d in devices if d.default] or devices[:1]
        elif wanted.strip().isdigit():
            chosen = [d for d in devices if d.index == int(wanted)]
        else:
            needle = wanted.strip().lower()
            chosen = [d for d in devices if d.name.lower() == needle] or [
                d for d in devices if needle in d.name.lower()]
        if len(chosen) != 1:
            how = "matches no" if not chosen else "matches several"
            names = ", ".join(f"{d.index} {d.name!r}" for d in chosen or devices)
            raise PlayerError(f"audio.device {wanted!r} {how} output device; devices: {names} "
                              "(see `edged devices`)")
        return chosen[0]

    def channels_for(self, index: int, rate: int) -> int | None:
        """1 or 2 (many hardware devices take stereo only) at `rate` with int16; None: neither."""
        sd = self.module()
        for channels in (1, 2):
            try:
                sd.check_output_settings(device=index, samplerate=rate, channels=channels,
                                         dtype="int16")
                return channels
            except (sd.PortAudioError, ValueError):
                continue
        return None

    def opened(self, change: int) -> None:
        with self.lock:
            self._open_streams += change


PORTAUDIO: Final = PortAudio()


def list_devices(refresh: bool = False) -> list[OutputDevice]:
    """Output devices PortAudio sees (for `edged devices`)."""
    return PORTAUDIO.list_devices(refresh)


def resolve_device(wanted: str | None) -> OutputDevice:
    return PORTAUDIO.resolve(wanted)


class Device:
    """The output stream of one player: opened on first use, kept open, reopened on failure.
    Used from the player thread only."""

    def __init__(self, config: AudioConfig, portaudio: PortAudio = PORTAUDIO) -> None:
        self._config = config
        self._pa = portaudio
        self._stream: Any = None
        self.rate: int | None = None
        self.channels = 1
        self.latency_s = 0.0

    @property
    def is_open(self) -> bool:
        return self._stream is not None

    def check(self) -> None:
        """PlayerError now if the configured device is missing or takes no 16-bit audio."""
        sd = self._pa.module()
        with self._pa.lock:
            self._pa.refresh()
            device = self._pa.resolve(self._config.device)
            rate = self._config.rate_hz or sd.query_devices(device.index)["default_samplerate"]
            if self._pa.channels_for(device.index, int(rate)) is None:
                raise PlayerError(f"output device {device.name!r} takes no 16-bit audio at "
                                  f"{rate:g} Hz")

    def open(self, rate_hint: int, wait: Callable[[float], bool],
             first_error: BaseException | None = None) -> None:
        """Open the device, retrying `audio.retries` times with doubling backoff. `wait(s)`
        sleeps and returns True when the announcement was interrupted meanwhile (Aborted).
        After a failure (`first_error`) the rate stays what it was: the audio is shaped for it."""
        delay = self._config.retry_backoff_ms / 1000
        attempts = self._config.retries + (1 if first_error is None else 0)
        last: BaseException | None = first_error
        for attempt in range(attempts):
            if attempt or first_error is not None:
                if wait(delay):
                    raise Aborted
                delay *= 2
            try:
                self._open(rate_hint, keep_rate=first_error is not None)
                return
            except PlayerError as err:
                last = err
                _LOGGER.warning("Audio device: %s (attempt %d of %d)", err, attempt + 1, attempts)
        if first_error is None:
            raise PlayerError(str(last))
        raise PlayerError(f"the audio device {self._config.device or 'default'!r} failed "
                          f"({first_error}) and reopening it failed: {last}")

    def reopen(self, err: BaseException, wait: Callable[[float], bool]) -> None:
        """After `err` from start() or write(): close, open again at the same rate, start."""
        _LOGGER.warning("Audio device failed during playback: %s; reopening it", err)
        rate = self.rate or 22050
        self.close()
        self.open(rate, wait, first_error=err)
        try:
            self._stream.start()
        except self._pa.module().PortAudioError as again:
            raise PlayerError(f"cannot start the reopened device: {again}") from None

    def start(self) -> None:
        """Start the stream; raises the PortAudio error for the caller to `reopen`."""
        self._stream.start()

    def write(self, mono: npt.NDArray[np.int16]) -> None:
        """Blocking write; raises the PortAudio error for the caller to `reopen`."""
        frames = mono if self.channels == 1 else np.repeat(mono[:, None], self.channels, 1)
        self._stream.write(frames)

    @property
    def failure(self) -> type[Exception]:
        """The exception type start() and write() raise when the device fails."""
        error: type[Exception] = self._pa.module().PortAudioError
        return error

    def stop(self) -> None:
        """Drain (the last buffer_ms still plays) and stop; a broken device is closed."""
        if self._stream is None:
            return
        try:
            self._stream.stop()
        except Exception as err:  # a broken device is reopened next time
            _LOGGER.warning("Stopping the audio stream failed: %s", err)
            self.close()

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            stream.abort()
            stream.close()
        except Exception as err:  # closing a dead device may fail too
            _LOGGER.debug("Closing the audio stream: %s", err)
        self._pa.opened(-1)

    def _open(self, rate_hint: int, keep_rate: bool) -> None:
        sd = self._pa.module()
        with self._pa.lock:
            self._pa.refresh()  # nothing is open now; see what is plugged in
            device = self._pa.resolve(self._config.device)
            if keep_rate or self._config.rate_hz:
                candidates = [rate_hint]
            else:
                candidates = [rate_hint, device.default_rate_hz, 48000, 44100]
            for rate in candidates:
                channels = self._pa.channels_for(device.index, rate)
                if channels is not None:
                    break
            else:
                key = "audio.rate_hz " if self._config.rate_hz else ""
                raise PlayerError(f"output device {device.name!r} takes no 16-bit audio at "
                                  f"{key}{' or '.join(map(str, candidates))} Hz")
            try:
                stream = sd.OutputStream(device=device.index, samplerate=rate, channels=channels,
                                         dtype="int16", latency=self._config.buffer_ms / 1000)
            except (sd.PortAudioError, ValueError) as err:
                raise PlayerError(f"cannot open output device {device.name!r}: {err}") from None
            self._pa.opened(+1)
        if rate != rate_hint:
            _LOGGER.info("Device %r does not take %d Hz; converting to %d Hz", device.name,
                         rate_hint, rate)
        _LOGGER.info("Opened output device %d %r: %d Hz, %d channel(s), latency %.0f ms",
                     device.index, device.name, rate, channels, 1000 * stream.latency)
        self._stream, self.rate, self.channels = stream, rate, channels
        self.latency_s = float(stream.latency)
