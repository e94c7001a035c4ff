"""Cache keys: sha256 over everything that changes the audio, remembered per loaded voice.

The key covers the voice's fingerprint (sha256 of its `.onnx` and `.onnx.json`), its
sample rate and the voice-level options that shape the audio, the per-request settings,
the normalizer and phonemizer versions, and the normalized text. Changing any of them
yields a new key, so stale audio cannot be served.

Normalizing a sentence costs ~100 µs, more than a memory hit itself, and a house repeats
the same phrases; so each loaded voice object keeps a small memo of (settings, raw text)
-> key. A Voice's fingerprint and normalizer never change while it is loaded, so the memo
cannot go stale; it dies with the voice (weak reference).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

from ..frontend.normalize import NORMALIZER_VERSION

if TYPE_CHECKING:
    from ..voice import SynthesisSettings
    from ..voice.backend import VoiceBackend

KEY_FORMAT: Final = 2
"""Bump when the recipe or the audio it stands for changes, so old entries can never match new
requests (2: model output converted to int16 by rounding, x32768, as everywhere in edged)."""
_MEMO_PER_VOICE: Final = 1024


def make_key(voice: VoiceBackend, settings: SynthesisSettings, text: str) -> str:
    """The cache key of `text` spoken by `voice` with `settings` (no memo)."""
    recipe = {
        "format": KEY_FORMAT,
        "voice": voice.fingerprint,
        "rate_hz": voice.rate_hz,
        # Voice-level options that change the audio too (pauses, where long sentences split).
        "sentence_pause_ms": voice.sentence_pause_ms,
        "max_phonemes": voice.max_phonemes,
        "settings": settings.cache_fields(),
        # Piper voices read English through the one normalizer; the others have their own.
        "normalizer": NORMALIZER_VERSION if voice.backend == "piper" else voice.normalizer_version,
        "phonemizer": _phonemizer_version(),
        "text": voice.normalize(text),
        **voice.cache_recipe(),  # {} for Piper voices: their keys are as they were
    }
    # ASCII JSON: any str (even a lone surrogate) encodes, and the bytes are canonical.
    blob = json.dumps(recipe, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


class KeyMemo:
    """make_key with a bounded LRU memo per voice object. Thread-safe."""

    def __init__(self, size: int = _MEMO_PER_VOICE) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._memos: weakref.WeakKeyDictionary[
            VoiceBackend, OrderedDict[tuple[SynthesisSettings, str], str]] = (
            weakref.WeakKeyDictionary())

    def key(self, voice: VoiceBackend, settings: SynthesisSettings, text: str) -> str:
        slot = (settings, text)
        with self._lock:
            memo = self._memos.get(voice)
            if memo is not None and (found := memo.get(slot)) is not None:
                memo.move_to_end(slot)
                return found
        key = make_key(voice, settings, text)
        with self._lock:
            memo = self._memos.setdefault(voice, OrderedDict())
            memo[slot] = key
            if len(memo) > self._size:
                memo.popitem(last=False)
        return key


@functools.cache
def _phonemizer_version() -> str:
    """espeak-ng's data decides the phonemes: a new release may change how a phrase sounds."""
    try:
        return importlib.metadata.version("espeakng-loader")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
