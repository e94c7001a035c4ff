"""Local playback: one player thread owning one PortAudio output stream.

    caller (daemon's announcer thread)              player thread ("edged-player")
    play(chunks): for chunk in chunks:              opens the device, then per announcement:
      (next() waits for the scheduler's chunks)     start -> write blocks -> stop (drain)
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
from collections.abc import Iterable
from typing import Final

import numpy as np

from ..audio import Audio, to_float, to_int16
from ..audio.loudness import Shaper, fade
from ..config import AudioConfig
from .chimes import Chimes
from .devices import Aborted, Device, PlayerError
from .session import Pcm, PlaybackReport, Session

_LOGGER = logging.getLogger(__name__)
_BLOCK_S: Final = 0.010
"""Granularity of writes: how often the player thread wakes while playing."""
_BLOCKED_S: Final = 0.005
"""A write that took longer than this waited for room: the device buffer is full."""
_STALL_S: Final = 10.0
"""No progress for this long while playing: the device hangs (a USB device gone mid-write)."""
_LATE_S: Final = _BLOCK_S
"""With a start instant: later than this counts as late (one block of writing)."""



# -- the player ---------------------------------------------------------------------------------


class Player:
    """Plays announcements one at a time; see the module docstring."""

    def __init__(self, config: AudioConfig, device: Device | None = None) -> None:
        self._config = config
        self._chimes = Chimes(config)
        self._inbox: queue.Queue[Session | None] = queue.Queue()
        self._lock = threading.Lock()
        self._live: list[Session] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self._device = device or Device(config)
        """Owned by the player thread (its rate is read elsewhere only as a hint)."""
        self._dev_end = 0.0  # when the loudspeaker will have played everything written
        self._busy = False  # serving a session (not idle, not waiting for the caller)
        self._heartbeat = time.monotonic()

    # -- public interface -------------------------------------------------------------------

    def check_device(self) -> None:
        """Raise PlayerError now if the configured device is missing or takes no 16-bit audio."""
        self._device.check()

    def play(self, chunks: Iterable[Audio], *, chime: str | None = None, volume: float = 1.0,
             rate_hz: int | None = None, start_at: float | None = None,
             skip_late: bool = False) -> PlaybackReport:
        """Play chunks as they come (see the module docstring); blocks until played. Calls
        from several threads play in turn: which announcement cuts in on which is the daemon's
        to decide (it calls `interrupt`), not the player's.

        `chime`: the priority whose chime (audio.chimes) plays first, if it has one.
        `rate_hz` (the voice's rate) lets the device open before the first chunk exists;
        without it, the first announcement waits for its first chunk before the pre-roll.
        `start_at` (time.monotonic()): the first sample (chime or voice) sounds then, by this
        player's clock: silence is written up to it, to the frame. A first chunk that is not
        there in time starts late (`late_s`), or with `skip_late` not at all (`skipped`).
        """
        if not 0.0 <= volume <= 1.0:
            raise ValueError(f"volume {volume!r}; expected 0.0 to 1.0")
        if self._closed:
            raise PlayerError("the player is closed")
        started = time.monotonic()
        chunks = iter(chunks)
        first: list[Audio] = []
        hint = self._config.rate_hz or self._device.rate or rate_hz
        if hint is None:
            first = [chunk for chunk in itertools.islice(chunks, 1)]
            if not first:
                return PlaybackReport(False, 0, 0.0, None, 0.0)
            hint = first[0].rate_hz
        session = Session(chime, hint, start_at, skip_late)
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
            wait_ms=round(1000 * session.wait_frames / rate, 1), started_at=session.started_at,
            late_s=_late(session), skipped=session.skipped)

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

    def _begin(self, session: Session) -> None:
        with self._lock:
            self._live.append(session)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="edged-player",
                                                daemon=True)
                self._thread.start()
        self._inbox.put(session)

    def _feed(self, session: Session, chunks: Iterable[Audio], volume: float) -> None:
        rate = session.rate
        # With an instant, the silence up to it is the pre-roll (written by the player thread).
        preroll = 0 if session.start_at is not None else self._config.preroll_ms
        lead_in = [np.zeros(int(rate * preroll / 1000), dtype=np.int16)]
        if session.chime is not None and session.chime in self._chimes:
            lead_in.append(self._chimes.at(session.chime, rate, volume))
        # One push: a caller slow to shape the chime must not get wait silence between the
        # pre-roll and the chime (wait_ms is the silence after both).
        session.push(np.concatenate(lead_in))
        shaper = Shaper(self._config, rate, volume)
        for chunk in chunks:
            if session.abort or session.done.is_set():  # interrupted, or the device failed
                return
            session.push(shaper.process(chunk), voice=True)
        session.push(shaper.finish(), voice=True)

    def _wait(self, session: Session, event: threading.Event) -> None:
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
            except Aborted:
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
        self._device.close()

    def _serve(self, session: Session) -> None:
        if not self._device.is_open:
            self._device.open(session.rate_hint, lambda s: self._backoff(session, s))
        session.rate = self._device.rate or 0
        session.ready.set()
        with session.cond:  # the device starts when there is something to play (and it is time)
            while not self._may_start(session):
                session.cond.wait(self._start_wait(session))
                self._heartbeat = time.monotonic()
            if not session.pending or session.abort or session.skipped:
                return
        self._start(session)
        try:
            self._play_session(session)
        finally:
            self._stop()

    def _play_session(self, s: Session) -> None:
        rate = self._device.rate or 1
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
                pad = self._pad(s, block) if s.pending and not s.abort else None
                if s.skipped:
                    return
                if s.abort:
                    tail = s.take(fade_n)
                    s.pending.clear()
                elif pad is not None:  # silence up to the start instant
                    piece = pad
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

    # -- the start instant (player thread, session.cond held) ------------------------------------

    def _may_start(self, s: Session) -> bool:
        if s.abort or s.eof and not s.pending:
            return True
        if s.start_at is None:
            return bool(s.pending)
        now = time.monotonic()
        if s.skip_late and not s.pending and now > s.start_at + _LATE_S:
            s.skipped = True  # nothing to play at the instant: the policy says skip
            s.started_at = now
            return True
        # Start the device a pre-roll (and the write-ahead) before the instant, not earlier.
        lead = (self._config.preroll_ms + self._config.buffer_ms) / 1000 + _BLOCK_S
        return bool(s.pending) and now >= s.start_at - lead

    def _start_wait(self, s: Session) -> float:
        if s.start_at is None:
            return 1.0
        lead = (self._config.preroll_ms + self._config.buffer_ms) / 1000 + _BLOCK_S
        return min(1.0, max(s.start_at - lead - time.monotonic(), 0.001))

    def _pad(self, s: Session, block: int) -> Pcm | None:
        """Silence still due before the start instant (None: none, the content plays now).
        The first call at or after the instant fixes when the first sample sounds."""
        if s.start_at is None or s.started_at is not None:
            return None
        at = max(self._dev_end, time.monotonic())  # when the next frame written will sound
        frames = round((s.start_at - at) * (self._device.rate or 1))
        if frames > 0:
            return np.zeros(min(frames, block), dtype=np.int16)
        s.started_at = at
        if s.skip_late and at - s.start_at > _LATE_S:
            s.skipped = True
        return None

    # -- device handling (player thread) --------------------------------------------------------

    def _backoff(self, s: Session, delay_s: float) -> bool:
        """Wait before reopening the device; True when the session was interrupted meanwhile."""
        self._heartbeat = time.monotonic() + delay_s
        with s.cond:
            return s.cond.wait_for(lambda: s.abort, timeout=delay_s)

    def _recover(self, s: Session, err: BaseException) -> None:
        s.device_errors += 1
        self._device.reopen(err, lambda delay: self._backoff(s, delay))
        self._dev_end = time.monotonic()

    def _start(self, s: Session) -> None:
        try:
            self._device.start()
        except self._device.failure as err:
            self._recover(s, err)
        self._dev_end = time.monotonic()

    def _write(self, s: Session, piece: Pcm) -> None:
        while True:
            began = time.monotonic()
            try:
                self._device.write(piece)
                break
            except self._device.failure as err:
                self._recover(s, err)
        now = time.monotonic()
        if now - began > _BLOCKED_S:  # the write waited for room: the buffer is full now
            self._dev_end = now + self._device.latency_s
        else:
            self._dev_end = max(self._dev_end, began) + len(piece) / (self._device.rate or 1)
        s.frames += len(piece)
        self._heartbeat = now
        if s.first_sound is None and piece.any():
            s.first_sound = now

    def _stop(self) -> None:
        self._device.stop()


def _late(session: Session) -> float:
    if session.start_at is None or session.started_at is None:
        return 0.0
    return max(0.0, session.started_at - session.start_at)
