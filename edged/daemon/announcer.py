"""One accepted announcement, from text to its outputs: loudspeaker and/or MQTT audio.

    stream = speech.open(utterance)      cache hit: one chunk now; miss: the scheduler's chunks
    for chunk in delivery.chunks(stream) counted, published at the request's volume, kept for
                                         a fallback, and handed to the player as they come
    -> Finished (the event's fields)     or an exception: the announcement failed

The first words play, or the first part is published, while the rest is still being made.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Final

from ..audio import Audio, with_volume
from ..house import Schedule
from ..mqtt import AudioSink, MqttLink
from ..playback import PlaybackReport, Player, PlayerError
from ..synthesis import Speech, SpeechStream, Utterance
from ..synthesis.sources import ANNOUNCER
from ..voice.errors import VoiceError
from .device_state import DeviceSettings
from .events import Finished
from .job import Job

_LOGGER = logging.getLogger(__name__)
_BEAT_EVERY_S: Final = 5.0
"""The announcer's heartbeat while it waits for a plan: it is alive (a critical request would be
served now), whatever a voice's load takes; the watchdog's age is 90 s."""
_PLAN_HUNG_S: Final = 1300.0
"""A plan waiting longer is a load that hangs: a load waits for the one before it, and preparing
a model is stopped after 600 s (voice/piper/prepared.py). The announcer stops beating then, so
systemd's watchdog restarts edged (`limits.heartbeat_max_age_s` later)."""
_PLAN_LIMIT_S: Final = 1800.0
"""Without a watchdog, the job fails after this long."""


class Heartbeat:
    """When the announcer thread last showed it is alive: each turn of its loop, each chunk it
    hands on (systemd's watchdog is fed only while it is fresh)."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def beat(self) -> None:
        self.last = time.monotonic()


class Skipped(Exception):
    """Not played: it could not start at its instant and `groups_late` is `skip`."""

    def __init__(self, late_s: float) -> None:
        super().__init__(f"late by {1000 * late_s:.0f} ms")
        self.late_s = late_s


class Announcer:
    """Runs on the daemon's announcer thread, one job at a time."""

    def __init__(self, speech: Speech, player: Player | None, link: MqttLink, *,
                 stream_audio: bool, fallback_to_publish: bool, beat: Callable[[], None],
                 settings: DeviceSettings | None = None, schedule: Schedule | None = None,
                 skip_late: bool = False) -> None:
        """`beat`: called with every chunk (the watchdog's heartbeat)."""
        self._speech = speech
        self._player = player
        self._link = link
        self._stream_audio = stream_audio
        self._fallback_to_publish = fallback_to_publish
        self._beat = beat
        self._settings = settings
        """The device's volume, applied to every announcement (its selected voice is applied
        at admission: policy.py)."""
        self._schedule = schedule
        """Time-of-day volume (multiplies the device's)."""
        self._skip_late = skip_late

    def announce(self, job: Job) -> Finished | None:
        """Speak `job`; None when it was stopped (Job.stop) before its plan was made: nothing
        was spoken. Raises on voice, scheduler or player failure (the job failed)."""
        request = job.request
        volume = request.volume
        if self._settings is not None:
            volume *= self._settings.volume_factor
        if self._schedule is not None:
            volume *= self._schedule.volume_factor(request.priority)
        utterance = self._plan(job)
        if utterance is None:
            return None
        delivery = _Delivery(job, self._sink(job) if job.publishes else None, volume=volume,
                             keep=self._fallback_to_publish and not job.publishes, beat=self._beat)
        report: PlaybackReport | None = None
        with contextlib.closing(self._speech.open(utterance, rank=request.rank,
                                                  source=ANNOUNCER)) as stream:
            job.attach(stream)
            chunks = delivery.chunks(stream)
            if job.plays:
                report = self._play(job, chunks, utterance, delivery)
            else:
                _drain(chunks)
        return delivery.finished(job, stream, report)

    def _plan(self, job: Job) -> Utterance | None:
        """The job's utterance, planned on a thread of its own: planning may load a voice (a
        second or two, 9 s on a loaded machine, minutes when a Kokoro model must be prepared
        first), and a critical request that arrives meanwhile stops this job (Job.stop) and is
        served at once rather than after the load. The load goes on; its voice stays loaded."""
        request = job.request
        planned: Future[Utterance] = Future()

        def plan() -> None:
            try:
                planned.set_result(self._speech.utterance(
                    request.text, request.voice, speaker=request.speaker, speed=request.speed,
                    language=request.language, rank=request.rank))
            except BaseException as err:  # the announcer raises it (or drops it if stopped)
                planned.set_exception(err)

        started = time.monotonic()

        def beat() -> None:
            if time.monotonic() - started < _PLAN_HUNG_S:
                self._beat()

        threading.Thread(target=plan, name="edged-plan", daemon=True).start()
        try:
            utterance = job.wait(planned, beat, _BEAT_EVERY_S, _PLAN_LIMIT_S)
        except TimeoutError:
            raise VoiceError(f"its voice did not load within {_PLAN_LIMIT_S:.0f} s") from None
        return utterance  # None: the job was stopped

    def _play(self, job: Job, chunks: Iterator[Audio], utterance: Utterance,
              delivery: _Delivery) -> PlaybackReport | None:
        assert self._player is not None, "a job that plays needs a player"
        request = job.request
        started = time.monotonic()
        start_at = job.instant.monotonic(time.time(), started) if job.instant else None
        try:
            report = self._player.play(chunks, chime=request.priority, volume=delivery.volume,
                                       rate_hz=utterance.rate_hz, start_at=start_at,
                                       skip_late=self._skip_late)
        except PlayerError as err:
            if not self._fallback_to_publish:
                raise
            _LOGGER.warning("Request %s: playing failed (%s); publishing its audio instead "
                            "(audio.fallback_to_publish)", request.id, err)
            delivery.publish_instead(self._sink(job), f"published instead of played: {err}")
            _drain(chunks)  # the rest, straight to MQTT
            return None
        if report.skipped:
            raise Skipped(report.late_s)
        if report.first_audio_s is not None:
            delivery.first_audio(started + report.first_audio_s)
        if report.interrupted:
            job.stop("interrupted during playback")
        return report

    def _sink(self, job: Job) -> AudioSink:
        if job.reply is not None:
            return AudioSink(self._link, job.reply.audio(job.request.id),
                             stream=self._stream_audio, correlation=job.reply.correlation)
        return AudioSink(self._link, self._link.topics.audio(job.request.id),
                         stream=self._stream_audio)


class _Delivery:
    """What one announcement's chunks go through on their way to the player: counted, published
    (at the request's volume), kept while a fallback to publishing may still need them."""

    def __init__(self, job: Job, sink: AudioSink | None, *, volume: float, keep: bool,
                 beat: Callable[[], None]) -> None:
        self._job = job
        self.volume = volume
        """The request's volume times the device's."""
        self._sink = sink
        self._kept: list[Audio] | None = [] if keep else None
        self._beat = beat
        self._frames = 0
        self._rate = 0
        self._first_audio: list[float] = []
        self._fallback: str | None = None
        self._parts: int | None = None

    def chunks(self, stream: SpeechStream) -> Iterator[Audio]:
        """The stream's chunks until it ends or the job is aborted; publishes what is left at the
        end of a complete announcement."""
        for chunk in stream:
            if self._job.abort is not None:
                return
            self._beat()
            self._frames += len(chunk.samples)
            self._rate = chunk.rate_hz
            if self._sink is not None:
                self._sink.add(with_volume(chunk, self.volume))
            elif self._kept is not None:
                self._kept.append(chunk)
            yield chunk
        if self._sink is not None and self._job.abort is None:
            self._parts = self._sink.finish()

    def publish_instead(self, sink: AudioSink, why: str) -> None:
        """The player failed: what it took goes out on MQTT, and so does the rest."""
        self._fallback = why
        if self._sink is None:
            self._sink = sink
            for chunk in self._kept or ():
                sink.add(with_volume(chunk, self.volume))
        self._kept = None

    def first_audio(self, at: float) -> None:
        self._first_audio.append(at)

    def finished(self, job: Job, stream: SpeechStream, report: PlaybackReport | None) -> Finished:
        first = list(self._first_audio)
        if self._sink is not None and self._sink.first_audio_at is not None:
            first.append(self._sink.first_audio_at)
        return Finished(
            id=job.request.id,
            cached=stream.cached,
            synth_ms=round(1000 * stream.synth_s, 1),
            first_audio_ms=round(1000 * (min(first) - job.received), 1) if first else None,
            duration_ms=round(1000 * self._frames / self._rate) if self._rate else 0,
            voice=stream.utterance.voice.name,
            underruns=report.underruns if report is not None else None,
            underrun_ms=report.underrun_ms if report is not None else None,
            audio_parts=(self._parts or 0) if self._sink is not None else None,
            audio_complete=self._sink.complete if self._sink is not None else None,
            fallback=self._fallback,
            play_at=job.instant.ms if job.instant is not None else None,
            late_ms=(round(1000 * report.late_s, 1) if job.instant is not None
                     and report is not None else None),
            segments=stream.utterance.segments,
        )


def _drain(chunks: Iterator[Audio]) -> None:
    for _chunk in chunks:
        pass
