"""Local playback: one player thread owning one PortAudio output stream.

    caller (daemon's speaker thread)                player thread ("edged-player")
    play(chunks): for chunk in chunks:              opens the device, then per announcement:
      (the voice synthesizes inside next())          start -> write blocks -> stop (drain)
      resample -> level -> fade -> volume ──push──►  paced to `buffer_ms` ahead of the speaker;
    blocks until the session is done                 bridges a late chunk with silence

The player writes at most `audio.buffer_ms` ahead of the loudspeaker (by its own clock, so a
device that never blocks, like ALSA's null/file sink, is paced in real time too). That keeps a
stop prompt: `interrupt()` fades out within `fade_ms` of what is not yet written, so the sound
ends about buffer_ms + fade_ms after the call. Sample formats: int16 to the device (exact),
float32 inside; see loudness.py for the gain rule and resample.py for rate conversion.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import wave
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from .audio import Audio
from .config import AudioConfig, ConfigError
from .loudness import Shaper, fade, shape_chime, to_float, to_int16

_LOGGER = logging.getLogger(__name__)
PRIORITIES: Final = ("critical", "high", "normal", "low")
_BLOCK_S: Final = 0.010
"""Granularity of writes: how often the player thread wakes while playing."""
_BLOCKED_S: Final = 0.005
"""A write that took longer than this waited for room: the device buffer is full."""
_STALL_S: Final = 10.0
"""No progress for this long while playing: the device hangs (a USB device gone mid-write)."""
_CHIME_MAX_S: Final = 10.0
_PA_LOCK = threading.RLock()
"""PortAudio (re)initialization and device queries are not thread-safe against each other."""
_open_streams = 0
"""Streams open in this process: PortAudio must not be re-initialized under them."""


class PlayerError(Exception):
    """No usable output device, or the device failed; the message names it."""


class _Aborted(Exception):
    """The session was interrupted while the player waited to reopen the device."""


@dataclass
class PlaybackReport:
    interrupted: bool
    underruns: int
    """Times the voice was late (synthesis slower than playback); bridged with silence."""
    underrun_ms: float
    first_audio_s: float | None
    """From play() to the first non-silent sample written to the device."""
    duration_s: float
    """Audio written to the device: pre-roll, chime, speech and bridging silence."""
    device_errors: int = 0
    """Device failures survived by reopening it during this announcement."""
    wait_ms: float = 0.0
    """Silence written after the pre-roll and chime while the first sentence was synthesized."""


# -- PortAudio access -------------------------------------------------------------------------


def _sounddevice() -> Any:
    try:
        import sounddevice
    except OSError as err:  # the wheel is there, libportaudio2 is not
        raise PlayerError(f"PortAudio is not available ({err}); install libportaudio2") from None
    return sounddevice


def _reinitialize(sd: Any) -> None:
    """Enumerate devices again (PortAudio only looks at import): sees a replugged speaker."""
    with _PA_LOCK:
        if _open_streams == 0 and hasattr(sd, "_terminate") and hasattr(sd, "_initialize"):
            sd._terminate()
            sd._initialize()


def list_devices(refresh: bool = False) -> list[dict]:
    """Output devices PortAudio sees: index, name, hostapi, channels, default_rate_hz, default."""
    sd = _sounddevice()
    with _PA_LOCK:
        if refresh:
            _reinitialize(sd)
        apis = sd.query_hostapis()
        default = sd.default.device[1]
        return [
            {"index": d["index"], "name": d["name"], "hostapi": apis[d["hostapi"]]["name"],
             "channels": d["max_output_channels"],
             "default_rate_hz": int(d["default_samplerate"]), "default": d["index"] == default}
            for d in sd.query_devices() if d["max_output_channels"] > 0
        ]


def _describe(devices: list[dict]) -> str:
    return ", ".join(f"{d['index']} {d['name']!r}" for d in devices)


def resolve_device(wanted: str | None) -> tuple[int, str]:
    """The configured device (index or name substring; None: the default) -> (index, name)."""
    devices = list_devices()
    said = f"audio.device is {wanted!r}" if wanted is not None else "audio.device is not set"
    if not devices:
        raise PlayerError(f"no audio output device ({said}); PortAudio sees none: check that "
                          "`aplay -l` lists a card and the user is in the 'audio' group")
    if wanted is None:
        chosen = [d for d in devices if d["default"]] or devices[:1]
    elif wanted.strip().isdigit():
        chosen = [d for d in devices if d["index"] == int(wanted)]
    else:
        needle = wanted.strip().lower()
        chosen = [d for d in devices if d["name"].lower() == needle] or [
            d for d in devices if needle in d["name"].lower()]
    if len(chosen) != 1:
        how = "matches no" if not chosen else "matches several"
        raise PlayerError(f"audio.device {wanted!r} {how} output device; devices: "
                          f"{_describe(chosen or devices)} (see `edged devices`)")
    return chosen[0]["index"], chosen[0]["name"]


def _channels_for(sd: Any, index: int, rate: int) -> int | None:
    """1 or 2 (many hardware devices take stereo only) at `rate` with int16; None: neither."""
    for channels in (1, 2):
        try:
            sd.check_output_settings(device=index, samplerate=rate, channels=channels,
                                     dtype="int16")
            return channels
        except (sd.PortAudioError, ValueError):
            continue
    return None


# -- one announcement, shared by the caller and the player thread ------------------------------


class _Session:
    def __init__(self, priority: str, rate_hint: int) -> None:
        self.priority, self.rate_hint = priority, rate_hint
        self.cond = threading.Condition()
        self.pending: deque[np.ndarray] = deque()  # int16 mono at the device rate
        self.voice = self.eof = self.abort = False
        self.ready, self.done = threading.Event(), threading.Event()
        self.rate = 0
        self.error: BaseException | None = None
        self.frames = self.underruns = self.underrun_frames = self.wait_frames = 0
        self.device_errors = 0
        self.first_sound: float | None = None

    def push(self, samples: np.ndarray, voice: bool = False) -> None:
        if len(samples):
            with self.cond:
                self.pending.append(samples)
                self.voice = self.voice or voice
                self.cond.notify_all()

    def finish(self) -> None:
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def cancel(self) -> None:
        with self.cond:
            self.abort = True
            self.cond.notify_all()

    def take(self, n: int) -> np.ndarray:
        """Up to n frames from the front of `pending` (call with cond held)."""
        parts, need = [], n
        while need > 0 and self.pending:
            head = self.pending[0]
            if len(head) <= need:
                parts.append(self.pending.popleft())
            else:
                parts.append(head[:need])
                self.pending[0] = head[need:]
            need -= len(parts[-1])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int16)


def _load_chime(path: Path, key: str) -> Audio:
    try:
        if path.stat().st_size > 8 << 20:
            raise ConfigError(f"{key}: {path}: larger than 8 MiB")
        with wave.open(str(path), "rb") as w:
            channels, width, rate, n = (w.getnchannels(), w.getsampwidth(), w.getframerate(),
                                        w.getnframes())
            if width != 2 or channels not in (1, 2):
                raise ConfigError(f"{key}: {path}: expected a 16-bit mono or stereo PCM WAV, "
                                  f"got {8 * width}-bit with {channels} channels")
            if n > _CHIME_MAX_S * rate:
                raise ConfigError(f"{key}: {path}: {n / rate:.1f} s long; at most "
                                  f"{_CHIME_MAX_S:.0f} s")
            data = np.frombuffer(w.readframes(n), dtype="<i2").reshape(-1, channels)
    except (OSError, EOFError, wave.Error) as err:
        raise ConfigError(f"{key}: {path}: not a readable WAV file: {err}") from None
    return Audio(data.mean(axis=1).round().astype(np.int16), rate)


# -- the player ---------------------------------------------------------------------------------


class Player:
    """Plays announcements one at a time; see the module docstring."""

    def __init__(self, config: AudioConfig) -> None:
        self._config = config
        self._chimes = {p: _load_chime(getattr(config.chimes, p), f"audio.chimes.{p}")
                        for p in PRIORITIES if getattr(config.chimes, p) is not None}
        self._chime_cache: dict[tuple[str, int], np.ndarray] = {}
        self._inbox: queue.Queue[_Session | None] = queue.Queue()
        self._lock = threading.Lock()
        self._live: list[_Session] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        # Owned by the player thread (read elsewhere only as hints):
        self._stream: Any = None
        self._rate: int | None = None
        self._channels = 1
        self._latency = 0.0
        self._dev_end = 0.0  # when the loudspeaker will have played everything written
        self._busy = False  # serving a session (not idle, not waiting for the caller)
        self._heartbeat = time.monotonic()

    # -- public interface -------------------------------------------------------------------

    def check_device(self) -> None:
        """Raise PlayerError now if the configured device is missing or takes no 16-bit audio."""
        sd = _sounddevice()
        with _PA_LOCK:
            _reinitialize(sd)  # a no-op while a stream is open
            index, name = resolve_device(self._config.device)
            rate = self._config.rate_hz or sd.query_devices(index)["default_samplerate"]
            if _channels_for(sd, index, int(rate)) is None:
                raise PlayerError(f"output device {name!r} takes no 16-bit audio at {rate:g} Hz")

    def play(self, chunks: Iterable[Audio], *, priority: str = "normal", volume: float = 1.0,
             rate_hz: int | None = None) -> PlaybackReport:
        """Play chunks as they come (see the module docstring); blocks until played.

        `rate_hz` (the voice's rate) lets the device open before the first chunk exists;
        without it, the first announcement waits for its first chunk before the pre-roll.
        """
        if priority not in PRIORITIES:
            raise ValueError(f"priority {priority!r}; expected one of {', '.join(PRIORITIES)}")
        if not 0.0 <= volume <= 1.0:
            raise ValueError(f"volume {volume!r}; expected 0.0 to 1.0")
        if self._closed:
            raise PlayerError("the player is closed")
        started = time.monotonic()
        chunks = iter(chunks)
        first: list[Audio] = []
        hint = self._config.rate_hz or self._rate or rate_hz
        if hint is None:
            first = [chunk for chunk in itertools.islice(chunks, 1)]
            if not first:
                return PlaybackReport(False, 0, 0.0, None, 0.0)
            hint = first[0].rate_hz
        session = _Session(priority, hint)
        self._begin(session)
        try:
            self._wait(session, session.ready)
            if session.error is None:
                self._feed(session, itertools.chain(first, chunks), volume)
        except BaseException:
            session.cancel()  # e.g. the voice failed: fade out what is playing, then re-raise
            raise
        finally:
            session.finish()
            try:
                self._wait(session, session.done)
            finally:
                with self._lock:
                    self._live.remove(session)
        if session.error is not None:
            raise session.error
        rate = session.rate or 1
        return PlaybackReport(
            interrupted=session.abort, underruns=session.underruns,
            underrun_ms=round(1000 * session.underrun_frames / rate, 1),
            first_audio_s=None if session.first_sound is None else session.first_sound - started,
            duration_s=session.frames / rate, device_errors=session.device_errors,
            wait_ms=round(1000 * session.wait_frames / rate, 1))

    def interrupt(self) -> None:
        """Fade out what is playing now; its play() returns interrupted=True as soon as the
        chunk generator hands back control (the sound stops within buffer_ms + fade_ms)."""
        with self._lock:
            live = list(self._live)
        for session in live:
            session.cancel()

    def close(self) -> None:
        self._closed = True
        self.interrupt()
        if self._thread is not None:
            self._inbox.put(None)
            self._thread.join(5.0)

    # -- caller side ----------------------------------------------------------------------------

    def _begin(self, session: _Session) -> None:
        with self._lock:
            if session.priority == "critical":
                for other in self._live:
                    other.cancel()
            self._live.append(session)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="edged-player",
                                                daemon=True)
                self._thread.start()
        self._inbox.put(session)

    def _feed(self, session: _Session, chunks: Iterable[Audio], volume: float) -> None:
        rate = session.rate
        lead_in = [np.zeros(int(rate * self._config.preroll_ms / 1000), dtype=np.int16)]
        if session.priority in self._chimes:
            lead_in.append(self._chime(session.priority, rate, volume))
        # One push: a caller slow to shape the chime must not get wait silence between the
        # pre-roll and the chime (wait_ms is the silence after both).
        session.push(np.concatenate(lead_in))
        shaper = Shaper(self._config, rate, volume)
        for chunk in chunks:
            if session.abort or session.done.is_set():  # interrupted, or the device failed
                return
            session.push(shaper.process(chunk), voice=True)
        session.push(shaper.finish(), voice=True)

    def _chime(self, priority: str, rate: int, volume: float) -> np.ndarray:
        key = (priority, rate)
        if key not in self._chime_cache:
            self._chime_cache[key] = shape_chime(self._chimes[priority], rate, self._config)
        return to_int16(self._chime_cache[key] * np.float32(volume))

    def _wait(self, session: _Session, event: threading.Event) -> None:
        """Wait for the player thread; a hung device write becomes a PlayerError, not a hang."""
        while not event.wait(0.5):
            thread = self._thread
            if thread is None or not thread.is_alive():
                raise PlayerError("the player thread has stopped")
            if self._busy and time.monotonic() - self._heartbeat > _STALL_S:
                raise PlayerError(f"the audio device {self._config.device or 'default'!r} "
                                  f"accepted no audio for {_STALL_S:.0f} s")

    # -- the player thread ------------------------------------------------------------------------

    def _run(self) -> None:
        while (session := self._inbox.get()) is not None:
            self._heartbeat, self._busy = time.monotonic(), True
            try:
                if not session.abort:
                    self._serve(session)
            except _Aborted:
                pass
            except PlayerError as err:
                session.error = err
            except Exception as err:  # a bug fails this announcement, not the player thread
                _LOGGER.exception("Playback failed")
                session.error = err
            finally:
                self._busy = False
                session.ready.set()
                session.done.set()
        self._close_stream()

    def _serve(self, session: _Session) -> None:
        if self._stream is None:
            self._open_with_retries(session, session.rate_hint, first_error=None)
        session.rate = self._rate or 0
        session.ready.set()
        with session.cond:  # the device starts when there is something to play
            while not (session.pending or session.eof or session.abort):
                session.cond.wait(1.0)
                self._heartbeat = time.monotonic()
            if not session.pending or session.abort:
                return
        self._start(session)
        try:
            self._play_session(session)
        finally:
            self._stop()

    def _play_session(self, s: _Session) -> None:
        rate = self._rate or 1
        block = max(1, int(rate * _BLOCK_S))
        # Write a block only when it still fits in buffer_ms: a stop is heard within that.
        ahead = max(self._config.buffer_ms / 1000 - _BLOCK_S, _BLOCK_S)
        low = min(ahead, 2 * _BLOCK_S)
        fade_n = int(rate * self._config.fade_ms / 1000)
        in_gap = False
        while True:
            with s.cond:
                while not s.abort:
                    self._heartbeat = now = time.monotonic()
                    slack = self._dev_end - now
                    if slack > ahead:  # far enough ahead of the loudspeaker
                        s.cond.wait(slack - ahead)
                    elif s.pending or s.eof:
                        break
                    elif slack > low:  # nothing to play yet, but the device is still busy
                        s.cond.wait(slack - low)
                    else:
                        break
                if s.abort:
                    tail = s.take(fade_n)
                    s.pending.clear()
                elif s.pending:
                    piece, in_gap = s.take(block), False
                elif s.eof:
                    return
                else:  # the next chunk is late: keep the device fed with silence
                    piece = np.zeros(block, dtype=np.int16)
                    if s.voice:
                        s.underruns += not in_gap
                        s.underrun_frames += block
                    else:  # still waiting for the first sentence
                        s.wait_frames += block
                    in_gap = True
            if s.abort:
                if len(tail):
                    self._write(s, to_int16(fade(to_float(tail), n_out=len(tail))))
                return
            self._write(s, piece)

    # -- device handling (player thread) --------------------------------------------------------

    def _open(self, rate_hint: int, keep_rate: bool) -> None:
        sd = _sounddevice()
        with _PA_LOCK:
            _reinitialize(sd)  # nothing is open now; see what is plugged in
            index, name = resolve_device(self._config.device)
            info = sd.query_devices(index)
            if keep_rate or self._config.rate_hz:
                candidates = [rate_hint]
            else:
                candidates = [rate_hint, int(info["default_samplerate"]), 48000, 44100]
            for rate in candidates:
                channels = _channels_for(sd, index, rate)
                if channels is not None:
                    break
            else:
                key = "audio.rate_hz " if self._config.rate_hz else ""
                raise PlayerError(f"output device {name!r} takes no 16-bit audio at "
                                  f"{key}{' or '.join(map(str, candidates))} Hz")
            try:
                stream = sd.OutputStream(device=index, samplerate=rate, channels=channels,
                                         dtype="int16", latency=self._config.buffer_ms / 1000)
            except (sd.PortAudioError, ValueError) as err:
                raise PlayerError(f"cannot open output device {name!r}: {err}") from None
        if rate != rate_hint:
            _LOGGER.info("Device %r does not take %d Hz; converting to %d Hz", name, rate_hint,
                         rate)
        _LOGGER.info("Opened output device %d %r: %d Hz, %d channel(s), latency %.0f ms",
                     index, name, rate, channels, 1000 * stream.latency)
        global _open_streams
        with _PA_LOCK:
            _open_streams += 1
        self._stream, self._rate, self._channels = stream, rate, channels
        self._latency = float(stream.latency)

    def _open_with_retries(self, s: _Session, rate_hint: int,
                           first_error: BaseException | None) -> None:
        delay = self._config.retry_backoff_ms / 1000
        attempts = self._config.retries + 1 if first_error is None else self._config.retries
        last: BaseException | None = first_error
        for attempt in range(attempts):
            if attempt or first_error is not None:
                self._heartbeat = time.monotonic() + delay
                with s.cond:
                    if s.cond.wait_for(lambda: s.abort, timeout=delay):
                        raise _Aborted
                delay *= 2
            try:
                self._open(rate_hint, keep_rate=first_error is not None)
                return
            except PlayerError as err:
                last = err
                _LOGGER.warning("Audio device: %s (attempt %d of %d)", err, attempt + 1,
                                attempts)
        if first_error is None:
            raise PlayerError(str(last))
        raise PlayerError(f"the audio device {self._config.device or 'default'!r} failed "
                          f"({first_error}) and reopening it failed: {last}")

    def _recover(self, s: _Session, err: BaseException) -> None:
        s.device_errors += 1
        _LOGGER.warning("Audio device failed during playback: %s; reopening it", err)
        rate = self._rate or s.rate_hint
        self._close_stream()
        self._open_with_retries(s, rate, first_error=err)
        self._start(s, recovering=True)

    def _start(self, s: _Session, recovering: bool = False) -> None:
        sd = _sounddevice()
        try:
            self._stream.start()
        except sd.PortAudioError as err:
            if recovering:
                raise PlayerError(f"cannot start the reopened device: {err}") from None
            self._recover(s, err)
            return
        self._dev_end = time.monotonic()

    def _write(self, s: _Session, piece: np.ndarray) -> None:
        sd = _sounddevice()
        frames = piece if self._channels == 1 else np.repeat(piece[:, None], self._channels, 1)
        while True:
            began = time.monotonic()
            try:
                self._stream.write(frames)
                break
            except sd.PortAudioError as err:
                self._recover(s, err)
        now = time.monotonic()
        if now - began > _BLOCKED_S:  # the write waited for room: the buffer is full now
            self._dev_end = now + self._latency
        else:
            self._dev_end = max(self._dev_end, began) + len(piece) / (self._rate or 1)
        s.frames += len(piece)
        self._heartbeat = now
        if s.first_sound is None and piece.any():
            s.first_sound = now

    def _stop(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.stop()  # drains: the last buffer_ms still plays
        except Exception as err:  # noqa: BLE001 - a broken device is reopened next time
            _LOGGER.warning("Stopping the audio stream failed: %s", err)
            self._close_stream()

    def _close_stream(self) -> None:
        global _open_streams
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.abort()
                stream.close()
            except Exception as err:  # noqa: BLE001 - closing a dead device may fail too
                _LOGGER.debug("Closing the audio stream: %s", err)
            with _PA_LOCK:
                _open_streams -= 1
