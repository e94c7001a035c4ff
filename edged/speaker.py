"""One accepted announcement, from text to its outputs: cache or voice, loudspeaker, MQTT audio.

Audio flows chunk by chunk (one per clause or sentence) from the cache or the voice through
`Speaker.speak` to the player and/or an `AudioSink`, so the first words play, or the first
part is published, while the rest is still being synthesized. A miss is put into the cache
only when it was synthesized completely.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from .audio import Audio, to_wav_bytes
from .mqtt import MqttLink, Ticket
from .player import PlayerError
from .voice import SynthesisSettings, Voice

_LOGGER = logging.getLogger(__name__)
_WAV_HEADER: Final = 44


@dataclass(eq=False)
class Job:
    """An accepted request on its way through the daemon."""

    request: Any  # edged.requests.Request
    ticket: Ticket
    key: str
    """What DoneLog remembers: the request id, or for id-less requests packet id + payload hash."""
    voice_name: str
    settings: SynthesisSettings | None
    output: str
    ttl_s: float
    received: float
    abort: str | None = None
    """Why to stop early (set from other threads); checked between chunks."""


class Speaker:
    """Runs on the daemon's speaker thread, one job at a time."""

    def __init__(self, cache: Any, player: Any, link: MqttLink, *, stream_audio: bool,
                 beat: Callable[[], None], fallback_to_publish: bool = False) -> None:
        self._fallback_to_publish = fallback_to_publish
        self._cache = cache
        self._player = player
        self._link = link
        self._stream_audio = stream_audio
        self._beat = beat

    def speak(self, job: Job, voice: Voice, settings: SynthesisSettings) -> dict[str, Any]:
        """Speak `job`; the fields of its `finished` event. Raises on voice/player failure."""
        request = job.request
        key = self._cache.key(voice, settings, request.text)
        audio = self._cache.get(key)
        timing = {"synth_s": 0.0}
        source = _once(audio) if audio is not None else self._synthesize(
            job, voice, settings, key, timing)
        sink = None
        if job.output in ("publish", "both"):
            sink = AudioSink(self._link, self._link.topics.audio(request.id),
                             stream=self._stream_audio)
        frames = [0, voice.sample_rate]
        parts_out: list[int] = []
        # What the player took, kept only to publish it if the device fails (fallback).
        keep: list[Audio] | None = [] if self._fallback_to_publish and sink is None else None

        def through(chunks: Iterator[Audio]) -> Iterator[Audio]:
            for chunk in chunks:
                if job.abort is not None:
                    return
                self._beat()
                frames[:] = [frames[0] + len(chunk.samples), chunk.rate_hz]
                if keep is not None and sink is None:
                    keep.append(chunk)
                if sink is not None:
                    sink.add(_scaled(chunk, request.volume))
                yield chunk
            if sink is not None and job.abort is None:
                parts_out.append(sink.finish())

        first_audio: list[float] = []
        result: dict[str, Any] = {}
        with contextlib.closing(source):  # closes the voice's stream when we stop early
            if job.output in ("play", "both"):
                play_start = time.monotonic()
                try:
                    report = self._player.play(through(source), priority=request.priority,
                                               volume=request.volume, rate_hz=voice.sample_rate)
                except PlayerError as err:
                    if not self._fallback_to_publish:
                        raise
                    _LOGGER.warning("Request %s: playing failed (%s); publishing its audio "
                                    "instead (audio.fallback_to_publish)", request.id, err)
                    result["fallback"] = f"published instead of played: {err}"
                    if sink is None:
                        sink = AudioSink(self._link, self._link.topics.audio(request.id),
                                         stream=self._stream_audio)
                        for chunk in keep or ():
                            sink.add(_scaled(chunk, request.volume))
                    for _ in through(source):  # the rest, straight to MQTT
                        pass
                else:
                    if report.first_audio_s is not None:
                        first_audio.append(play_start + report.first_audio_s)
                    result["underruns"] = report.underruns
                    result["underrun_ms"] = report.underrun_ms
                    if report.interrupted and job.abort is None:
                        job.abort = "interrupted during playback"
            else:
                for _ in through(source):
                    pass
        if sink is not None:
            result["audio_parts"] = parts_out[0] if parts_out else 0
            if sink.first_audio_at is not None:
                first_audio.append(sink.first_audio_at)
        result.update(
            cached=audio is not None,
            synth_ms=round(1000 * timing["synth_s"], 1),
            first_audio_ms=round(1000 * (min(first_audio) - job.received), 1)
            if first_audio else None,
            duration_ms=round(1000 * frames[0] / frames[1]) if frames[1] else 0,
            voice=voice.name,
        )
        return result

    def _synthesize(self, job: Job, voice: Voice, settings: SynthesisSettings, key: str,
                    timing: dict[str, float]) -> Iterator[Audio]:
        """Chunks as the voice makes them; the joined audio goes into the cache at the end."""
        parts: list[Audio] = []
        stream = voice.stream(job.request.text, settings)
        try:
            while True:
                start = time.monotonic()
                chunk = next(stream, None)
                timing["synth_s"] += time.monotonic() - start
                if chunk is None:
                    break
                parts.append(chunk)
                yield chunk
        finally:
            stream.close()
        if job.abort is None and parts:
            self._cache.put(key, Audio.join(parts, voice.sample_rate), text=job.request.text)


class AudioSink:
    """One announcement's audio out to `<prefix>/audio/<id>`.

    Whole form: one 16-bit mono WAV on `<prefix>/audio/<id>`, when it fits the payload limit.
    Parts form (too big, or `stream`): WAVs on `<prefix>/audio/<id>/0`, `/1`, ... each playable
    alone, then `<prefix>/audio/<id>/end` with `{"parts", "frames", "rate_hz", "duration_ms"}`.
    """

    def __init__(self, link: MqttLink, topic: str, *, stream: bool) -> None:
        self._link = link
        self._topic = topic
        self._stream = stream
        self._held: list[Audio] = []
        self._parts = 0
        self._frames = 0
        self._rate = 0
        self.first_audio_at: float | None = None
        """time.monotonic() when the first audio payload was handed to the client."""
        self.complete = True
        """False when some payload was dropped (offline buffer full)."""

    def add(self, audio: Audio) -> None:
        self._rate = audio.rate_hz
        self._frames += len(audio.samples)
        if self._stream:
            self._send_parts(audio)
        else:
            self._held.append(audio)

    def finish(self) -> int:
        """Publish what is left; the number of audio payloads sent in all."""
        if not self._stream:
            whole = Audio.join(self._held, self._rate or 22050)
            self._held = []
            wav = to_wav_bytes(whole)
            if len(wav) <= self._link.payload_limit(self._topic):
                self._mark()
                self.complete &= self._link.publish(self._topic, wav, bulky=True)
                return 1
            self._send_parts(whole)
        end = {"parts": self._parts, "frames": self._frames, "rate_hz": self._rate,
               "duration_ms": round(1000 * self._frames / self._rate) if self._rate else 0}
        self.complete &= self._link.publish_json(f"{self._topic}/end", end)
        return self._parts

    def _send_parts(self, audio: Audio) -> None:
        longest = f"{self._topic}/{self._parts + 99999}"
        per_part = max((self._link.payload_limit(longest) - _WAV_HEADER) // 2, 1)
        samples = audio.samples
        for start in range(0, len(samples), per_part):
            part = Audio(samples[start:start + per_part], audio.rate_hz)
            self._mark()
            sent = self._link.publish(f"{self._topic}/{self._parts}", to_wav_bytes(part),
                                      bulky=True)
            self.complete &= sent
            self._parts += 1

    def _mark(self) -> None:
        if self.first_audio_at is None:
            self.first_audio_at = time.monotonic()


def _once(audio: Audio) -> Iterator[Audio]:
    yield audio


def _scaled(audio: Audio, volume: float) -> Audio:
    if volume >= 1.0:
        return audio
    samples = np.round(audio.samples.astype(np.float32) * volume).astype(np.int16)
    return Audio(samples, audio.rate_hz)
