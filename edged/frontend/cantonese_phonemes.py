"""Cantonese for Kokoro-82M: characters -> Jyutping (ToJyutping) -> IPA in Kokoro's symbols,
with the six tones as the tone arrows of Kokoro's Mandarin voices.

    cantonese_phonemes("有人喺門口。") -> "jɐ↗u jɐ↓n hɐ↓i mu↓n hɐ↗u."   (roughly)

Kokoro-82M never heard Cantonese; its Mandarin voices know four tone contours (→ 55, ↗ 35,
↓ 214/low, ↘ 51) and most Cantonese sounds (ɐ, ɔ, œ, y from its other languages). A Cantonese
syllable becomes its initial, nucleus and coda in IPA, the tone arrow after the nucleus (where
misaki writes Mandarin's). The tone map (`TONE_MAPS`, chosen on the judge: docs/languages.md)
gives each of the six Cantonese tones the nearest Mandarin contour: 1 high level → 55, 2 high
rising and 5 low rising → 35, 4 low falling → low, 3 and 6 (mid and low level) as measured.
Characters ToJyutping cannot read are left out; digits are words before this
(frontend/chinese.py with language "yue").
"""

from __future__ import annotations

import re
from typing import Final

from .letters import LETTERS

_INITIALS: Final = {"b": "p", "p": "pʰ", "m": "m", "f": "f", "d": "t", "t": "tʰ", "n": "n",
                    "l": "l", "g": "k", "k": "kʰ", "ng": "ŋ", "h": "h", "gw": "kw", "kw": "kʰw",
                    "w": "w", "z": "ʦ", "c": "ʦʰ", "s": "s", "j": "j", "": ""}
_NUCLEI: Final = {"aa": "a", "a": "ɐ", "e": "ɛ", "i": "i", "o": "ɔ", "u": "u", "oe": "œ",
                  "eo": "ø", "yu": "y"}
_SPECIAL: Final = {"ing": ("e", "ŋ"), "ik": ("e", "k"), "ung": ("o", "ŋ"), "uk": ("o", "k"),
                   "ei": ("e", "i"), "ou": ("o", "u"), "oi": ("ɔ", "y"), "ui": ("u", "y"),
                   "eoi": ("ø", "y")}
"""Finals whose nucleus is not the letter's usual sound (ing is [ɪŋ], ou [ou])."""
_CODAS: Final = {"": "", "i": "i", "u": "u", "m": "m", "n": "n", "ng": "ŋ", "p": "p", "t": "t",
                 "k": "k"}
_SYLLABLE: Final = re.compile(r"^(gw|kw|ng|[bpmfdtnlgkhwzcsj]?)(aa|oe|eo|yu|[aeiou])?"
                              r"(ng|[iumnptk]?)([1-6])$")
TONE_MAPS: Final = {
    "level": {"1": "→", "2": "↗", "3": "→", "4": "↓", "5": "↗", "6": "↓"},
    "neutral": {"1": "→", "2": "↗", "3": "", "4": "↓", "5": "↗", "6": ""},
    "falling": {"1": "→", "2": "↗", "3": "→", "4": "↘", "5": "↗", "6": "↓"},
    "low": {"1": "→", "2": "↗", "3": "↓", "4": "↘", "5": "↗", "6": "↓"},
    "none": {"1": "", "2": "", "3": "", "4": "", "5": "", "6": ""},
}
DEFAULT_TONES: Final = "neutral"
_PUNCTUATION: Final = {"，": ",", "。": ".", "！": "!", "？": "?", "、": ",", "：": ":", "；": ";",
                       ",": ",", ".": ".", "!": "!", "?": "?", ":": ":", ";": ";"}


def syllable_ipa(jyutping: str, tones: dict[str, str]) -> str:
    """One Jyutping syllable ("hoeng1") in Kokoro's symbols; "" when it is not one."""
    m = _SYLLABLE.match(jyutping)
    if m is None:
        return ""
    initial, nucleus, coda, tone = m.groups()
    mark = tones[tone]
    if nucleus is None:  # the syllabic nasals m4 (唔) and ng5 (五)
        return _INITIALS[initial] + mark if initial in ("m", "ng") and not coda else ""
    final = nucleus + coda
    if final in _SPECIAL:
        vowel, end = _SPECIAL[final]
        return _INITIALS[initial] + vowel + mark + _CODAS.get(end, end)
    return _INITIALS[initial] + _NUCLEI[nucleus] + mark + _CODAS[coda]


def cantonese_phonemes(text: str, tone_map: str = DEFAULT_TONES) -> str:
    """Kokoro phonemes of Cantonese `text` (characters; numbers already words)."""
    import ToJyutping

    tones = TONE_MAPS[tone_map]
    words = []
    for char, reading in ToJyutping.get_jyutping_list(text):
        if reading:
            words.append(" ".join(syllable_ipa(s, tones) for s in reading.split()))
        elif char.isascii() and char.isalpha():
            words.append(LETTERS[char.upper()])  # a code's letters (CA1831), by their names
        elif char in _PUNCTUATION:
            words.append(_PUNCTUATION[char])
        elif char.isspace():
            words.append(" ")
    return re.sub(r" *([,.!?:;]) *", r"\1 ", " ".join(words)).strip()
