"""espeak-ng's formant synthesizer as a voice: `espeak:yue`, `espeak:ko`, `espeak:cmn`, ...

The libespeak-ng that espeakng-loader ships (already loaded for Piper's phonemes) speaks 100+
languages at RTF 0.002 in no memory to speak of. edged uses it for Cantonese and Korean, which
have no neural voice whose weights a package registry serves, and as the last voice of every
language's fallback chain (for Mandarin when the Kokoro voice is absent or over budget).
Robotic, but intelligible, and never out of memory.

One `next()` of `stream` synthesizes one sentence (cut at clause ends past `_MAX_CHARS`): a
few milliseconds, so the scheduler's priorities hold.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
from collections.abc import Iterator
from typing import Final

import numpy as np

from ..audio import Audio
from ..frontend.japanese import kana_reading
from ..frontend.phonemes import Espeak, PhonemizerError
from ..frontend.sentences import SENTENCE_TEXT
from ..languages.codes import locale_language
from .backend import ESPEAK_PREFIX, OneSpeakerVoice
from .errors import VoiceError
from .lanes import Lanes
from .settings import SynthesisSettings

ESPEAK_VOICES: Final = {"en": "en-us", "zh": "cmn", "yue": "yue", "ja": "ja", "ko": "ko"}
"""espeak-ng's voice for each of our languages."""
LICENSE: Final = "GPL-3.0-or-later (espeak-ng, shipped by the espeakng-loader wheel)"
_WORDS_PER_MINUTE: Final = 160
_MAX_CHARS: Final = 200
_SENTENCES: Final = re.compile(SENTENCE_TEXT + r"+[。！？.!?]*\s*|[。！？.!?\n]+\s*")
_CLAUSES: Final = re.compile(r"[^，、,;；]+[，、,;；]*\s*")


class EspeakVoice(OneSpeakerVoice):
    """One espeak-ng voice (a `VoiceBackend`); thread-safe (espeak-ng's lock serializes)."""

    backend = "espeak"
    max_phonemes = 0

    def __init__(self, espeak_voice: str, *, sentence_pause_ms: int = 200,
                 date_order: str = "mdy") -> None:
        self.espeak_voice = espeak_voice
        self.name = ESPEAK_PREFIX + espeak_voice
        self.language = "zh" if espeak_voice == "cmn" else locale_language(espeak_voice)
        self.sentence_pause_ms = sentence_pause_ms
        self._use_normalizer(date_order)
        try:
            self._espeak = Espeak.get()
            self._espeak.synthesize("", espeak_voice, _WORDS_PER_MINUTE)  # the voice exists?
        except PhonemizerError as err:
            raise VoiceError(f"voice {self.name}: {err}") from err
        self.rate_hz = self._espeak.rate_hz
        self.license = LICENSE
        self.credit = "espeak-ng"

    @property
    def fingerprint(self) -> str:
        version = importlib.metadata.version("espeakng-loader")
        return hashlib.sha256(f"espeak:{self.espeak_voice}:{version}".encode()).hexdigest()

    def normalize(self, text: str) -> str:
        text = self._normalize(text)
        return kana_reading(text) if self.language == "ja" else text

    def stream(self, text: str, settings: SynthesisSettings | None = None,
               lanes: Lanes | None = None) -> Iterator[Audio]:
        """One chunk per sentence; the sentence pause ends each but the last."""
        settings = settings or self.settings()
        wpm = max(80, min(450, round(_WORDS_PER_MINUTE / settings.length_scale)))
        pieces = sentences(self.normalize(text))
        pause = np.zeros(self.rate_hz * self.sentence_pause_ms // 1000, dtype=np.int16)
        for i, piece in enumerate(pieces):
            try:
                pcm = self._espeak.synthesize(piece, self.espeak_voice, wpm)
            except PhonemizerError as err:
                raise VoiceError(f"voice {self.name}: {err}") from err
            samples = np.frombuffer(pcm, dtype="<i2").astype(np.int16)
            if i < len(pieces) - 1:
                samples = np.concatenate([samples, pause])
            yield Audio(samples, self.rate_hz)


def sentences(text: str) -> list[str]:
    """Sentences with something to say, each cut at clauses when longer than `_MAX_CHARS`."""
    out: list[str] = []
    for sentence in _SENTENCES.findall(text):
        if not any(char.isalnum() for char in sentence):
            continue
        if len(sentence) <= _MAX_CHARS:
            out.append(sentence.strip())
            continue
        for clause in _CLAUSES.findall(sentence):
            out += [clause[i:i + _MAX_CHARS].strip() for i in range(0, len(clause), _MAX_CHARS)]
    return [s for s in out if s]
