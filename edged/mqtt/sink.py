"""One announcement's audio out to `<prefix>/audio/<id>`: one WAV, or numbered parts and an end."""

from __future__ import annotations

import time
from typing import Final

from ..audio import Audio, to_wav_bytes
from .link import MqttLink

_WAV_HEADER: Final = 44


class AudioSink:
    """One announcement's audio out to `<prefix>/audio/<id>`.

    Whole form: one 16-bit mono WAV on `<prefix>/audio/<id>`, when it fits the payload limit.
    Parts form (too big, or `stream`): WAVs on `<prefix>/audio/<id>/0`, `/1`, ... each playable
    alone, then `<prefix>/audio/<id>/end` with `{"parts", "frames", "rate_hz", "duration_ms"}`.
    """

    def __init__(self, link: MqttLink, topic: str, *, stream: bool,
                 correlation: bytes | None = None) -> None:
        self._link = link
        self._correlation = correlation
        """MQTT 5 Correlation Data of the request (reply_to), on every payload."""
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
                self.complete &= self._link.publish(self._topic, wav, bulky=True,
                                                    correlation=self._correlation)
                return 1
            self._send_parts(whole)
        end = {"parts": self._parts, "frames": self._frames, "rate_hz": self._rate,
               "duration_ms": round(1000 * self._frames / self._rate) if self._rate else 0}
        self.complete &= self._link.publish_json(f"{self._topic}/end", end,
                                                 correlation=self._correlation)
        return self._parts

    def _send_parts(self, audio: Audio) -> None:
        longest = f"{self._topic}/{self._parts + 99999}"
        per_part = max((self._link.payload_limit(longest) - _WAV_HEADER) // 2, 1)
        samples = audio.samples
        for start in range(0, len(samples), per_part):
            part = Audio(samples[start:start + per_part], audio.rate_hz)
            self._mark()
            sent = self._link.publish(f"{self._topic}/{self._parts}", to_wav_bytes(part),
                                      bulky=True, correlation=self._correlation)
            self.complete &= sent
            self._parts += 1

    def _mark(self) -> None:
        if self.first_audio_at is None:
            self.first_audio_at = time.monotonic()
