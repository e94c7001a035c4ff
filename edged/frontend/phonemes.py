"""Phonemes from libespeak-ng (espeakng-loader's library and data) in-process, through ctypes.

espeak-ng keeps global state (the current voice, its dictionaries), so every call holds one
process-wide lock. `espeak_TextToPhonemes` returns one clause per call and advances the text
pointer; the clause's terminator (. , ? ! : ;) is read from the text it consumed, and kept as a
"phoneme" because Piper voices were trained with punctuation in the sequence.
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

_LOGGER = logging.getLogger(__name__)

BOS: Final = "^"
EOS: Final = "$"
PAD: Final = "_"

_AUDIO_OUTPUT_SYNCHRONOUS: Final = 2
_CHARS_UTF8: Final = 1
_POS_CHARACTER: Final = 1
_RATE: Final = 1
"""espeakRATE: words per minute."""
_SYNTH_CALLBACK: Final = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                                          ctypes.c_void_p)
_PHONEMES_IPA: Final = 0x02
_SENTENCE_END: Final = frozenset(".?!")
_CLAUSE_END: Final = frozenset(",:;")
_TERMINATORS: Final = _SENTENCE_END | _CLAUSE_END
# espeak marks words it reads in another language as "(en)...(en-us)"; the voice never saw these.
_LANG_SWITCH: Final = re.compile(r"\([^)]+\)")


class PhonemizerError(RuntimeError):
    """libespeak-ng could not be loaded, initialized or given the voice."""


class Espeak:
    """The process-wide libespeak-ng; use `Espeak.get()`."""

    _instance: Espeak | None = None
    _lock = threading.Lock()

    def __init__(self, library: str, data_dir: str) -> None:
        try:
            lib = ctypes.CDLL(library)
        except OSError as err:
            raise PhonemizerError(f"cannot load libespeak-ng from {library}: {err}") from err
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_TextToPhonemes.argtypes = [
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int,
        ]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        # The path is the folder that *contains* espeak-ng-data.
        parent = str(Path(data_dir).parent).encode()
        rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, parent, 0)
        if rate < 0:
            raise PhonemizerError(f"espeak-ng failed to initialize with data in {data_dir}")
        self.rate_hz = int(rate)
        """espeak-ng's own output rate (22050 Hz)."""
        self._lib = lib
        self._voice: str | None = None
        self._samples: list[bytes] = []
        # Kept referenced: libespeak-ng calls it for as long as the library lives.
        self._callback = _SYNTH_CALLBACK(self._collect)
        lib.espeak_SetSynthCallback(self._callback)
        lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
                                     ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]

    @classmethod
    def get(cls) -> Espeak:
        with cls._lock:
            if cls._instance is None:
                import espeakng_loader

                cls._instance = cls(espeakng_loader.get_library_path(), espeakng_loader.get_data_path())
            return cls._instance

    def clauses(self, text: str, voice: str) -> list[tuple[str, str]]:
        """(IPA phonemes, terminator) for each clause of `text`; terminator may be ''."""
        encoded = text.encode("utf-8")
        buf = ctypes.create_string_buffer(encoded)
        base = ctypes.addressof(buf)
        pointer = ctypes.c_void_p(base)
        result: list[tuple[str, str]] = []
        with self._lock:
            self._set_voice(voice)
            start = 0
            while pointer.value:
                raw = self._lib.espeak_TextToPhonemes(ctypes.byref(pointer), _CHARS_UTF8, _PHONEMES_IPA)
                # espeak has read one character of the next clause ahead: back up over it.
                end = _char_start(encoded, pointer.value - base - 1) if pointer.value else len(encoded)
                consumed = encoded[start:end].decode("utf-8", "replace")
                start = end
                phonemes = (raw or b"").decode("utf-8", "replace")
                result.append((phonemes, _terminator(consumed)))
        return result

    def synthesize(self, text: str, voice: str, words_per_minute: int) -> bytes:
        """espeak-ng's formant synthesis of `text`: 16-bit mono PCM at `rate_hz`."""
        encoded = text.encode("utf-8") + b"\0"
        with self._lock:
            self._set_voice(voice)
            self._lib.espeak_SetParameter(_RATE, words_per_minute, 0)
            self._samples = []
            status = self._lib.espeak_Synth(encoded, len(encoded), 0, _POS_CHARACTER, 0,
                                            _CHARS_UTF8, None, None)
            pcm, self._samples = b"".join(self._samples), []
        if status != 0:
            raise PhonemizerError(f"espeak-ng could not synthesize with voice {voice!r} "
                                  f"(error {status})")
        return pcm

    def _collect(self, wav: ctypes.c_void_p, count: int, _events: ctypes.c_void_p) -> int:
        if wav and count > 0:
            self._samples.append(ctypes.string_at(wav, 2 * count))
        return 0  # go on

    def _set_voice(self, voice: str) -> None:
        if voice != self._voice:
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise PhonemizerError(f"espeak-ng has no voice {voice!r}")
            self._voice = voice


def _char_start(encoded: bytes, index: int) -> int:
    """The start of the UTF-8 character that holds byte `index`."""
    while 0 < index < len(encoded) and encoded[index] & 0xC0 == 0x80:
        index -= 1
    return max(index, 0)


def _terminator(consumed: str) -> str:
    stripped = consumed.rstrip()
    for char in reversed(stripped):
        if char in _TERMINATORS:
            return char
        if char not in "\"')]}»”’":
            break
    return ""


def phonemize(text: str, voice: str) -> list[list[str]]:
    """Phonemes (as code points, NFD) grouped by sentence, punctuation kept."""
    sentences: list[list[str]] = []
    current: list[str] = []
    for phonemes, terminator in Espeak.get().clauses(text, voice):
        phonemes = _LANG_SWITCH.sub("", phonemes).strip() + terminator
        if terminator in _CLAUSE_END:
            phonemes += " "
        current.extend(unicodedata.normalize("NFD", phonemes))
        if terminator in _SENTENCE_END:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return [s for s in sentences if any(not p.isspace() for p in s)]


class PhonemeIds:
    """Phoneme -> id mapping in Piper's layout: BOS, PAD after every phoneme, EOS.

    A phoneme missing from the map is skipped, counted, and warned about once.
    """

    def __init__(self, id_map: Mapping[str, Sequence[int]]) -> None:
        for needed in (BOS, EOS, PAD):
            if needed not in id_map:
                raise ValueError(f"phoneme_id_map has no {needed!r}")
        self._map = {k: list(v) for k, v in id_map.items()}
        self.missing: dict[str, int] = {}

    def __call__(self, phonemes: Sequence[str]) -> list[int]:
        pad = self._map[PAD]
        ids = self._map[BOS] + pad
        for phoneme in phonemes:
            mapped = self._map.get(phoneme)
            if mapped is None:
                self._count_missing(phoneme)
                continue
            ids += mapped
            ids += pad
        return ids + self._map[EOS]

    def _count_missing(self, phoneme: str) -> None:
        count = self.missing.get(phoneme, 0)
        self.missing[phoneme] = count + 1
        if count == 0:
            _LOGGER.warning("Phoneme %r (U+%04X) is not in the voice's map; skipped",
                            phoneme, ord(phoneme[0]))
