"""Korean for Kokoro-82M: pronounced Hangul (korean_pronounce.py) -> IPA in Kokoro's symbols.

    korean_phonemes("현관문이 열렸습니다.") -> "hjʌnɡwanmuni jʌlʌt̚sɯmnida."  (roughly)

Kokoro was never trained on Korean, but its vocabulary is most of IPA and its Mandarin voices
know aspirated and plain stops (pʰ/p), ʨ ʨʰ ɕ, and the other vowels of Korean (ʌ ɯ from its
English and Japanese data). Each pronounced syllable becomes IPA with the allophones a listener
hears: a plain stop is voiced between voiced sounds inside a word (부엌 -> buʌk, 아기 -> aɡi),
tense stops are the plain unaspirated ones (Kokoro has no tense phonation), ㄹ is ɾ between
vowels and l in a coda, ㅅ/ㅆ are ɕ before i and j. `tone` marks each syllable with one of
Kokoro's Mandarin tone arrows (its Mandarin voices say a syllable without one as a weak neutral
tone; the mark goes after the vowel, as misaki writes Mandarin): which mark, if any, was chosen
on the judge (docs/languages.md).
"""

from __future__ import annotations

import re
from typing import Final

from .korean_pronounce import Syllable, decompose, pronounce

_ONSET: Final = {"ㄱ": "k", "ㄲ": "k", "ㅋ": "kʰ", "ㄷ": "t", "ㄸ": "t", "ㅌ": "tʰ", "ㅂ": "p",
                 "ㅃ": "p", "ㅍ": "pʰ", "ㅈ": "ʨ", "ㅉ": "ʨ", "ㅊ": "ʨʰ", "ㅅ": "s", "ㅆ": "s",
                 "ㅎ": "h", "ㄴ": "n", "ㅁ": "m", "ㄹ": "ɾ", "ㅇ": ""}
_VOICED: Final = {"ㄱ": "ɡ", "ㄷ": "d", "ㅂ": "b", "ㅈ": "ʥ"}
_CODA: Final = {"": "", "ㄱ": "k", "ㄷ": "t", "ㅂ": "p", "ㄴ": "n", "ㄹ": "l", "ㅁ": "m",
                "ㅇ": "ŋ"}
_VOWEL: Final = {"ㅏ": "a", "ㅐ": "e", "ㅑ": "ja", "ㅒ": "je", "ㅓ": "ʌ", "ㅔ": "e", "ㅕ": "jʌ",
                 "ㅖ": "je", "ㅗ": "o", "ㅘ": "wa", "ㅙ": "we", "ㅚ": "we", "ㅛ": "jo", "ㅜ": "u",
                 "ㅝ": "wʌ", "ㅞ": "we", "ㅟ": "wi", "ㅠ": "ju", "ㅡ": "ɯ", "ㅢ": "ɯi", "ㅣ": "i"}
_PUNCTUATION: Final = str.maketrans({"。": ".", "，": ",", "、": ",", "！": "!", "？": "?",
                                     "：": ":", "；": ";", "·": " ", "~": " "})
TONES: Final = ("", "→", "↗", "↓", "↘")


def korean_phonemes(text: str, tone: str = "") -> str:
    """Kokoro phonemes of Korean `text` (numbers already words: frontend/korean.py)."""
    items = [decompose(c) or c for c in pronounce(text).translate(_PUNCTUATION)]
    out = []
    before: Syllable | None = None  # the syllable before in the word
    for item in items:
        if not isinstance(item, Syllable):
            out.append(item if item in " .,!?:;" else " ")
            before = None  # a word starts: its first stop is not voiced (voiced, the judge
            continue        # heard 부족 as 무조, 도착 as 노착)
        out.append(_onset(item, before) + _VOWEL[item.vowel] + tone + _CODA.get(item.coda, ""))
        before = item
    return re.sub(r" +", " ", "".join(out)).strip()


def _onset(s: Syllable, before: Syllable | None) -> str:
    """A plain stop is voiced after a vowel or sonorant coda in the same word; ㅅ/ㅆ are ɕ
    before i and j."""
    if s.onset in _VOICED and before is not None and before.coda in ("", "ㄴ", "ㄹ", "ㅁ", "ㅇ"):
        return _VOICED[s.onset]
    if s.onset in ("ㅅ", "ㅆ") and _VOWEL[s.vowel][0] in "ij":
        return "ɕ"
    if s.onset == "ㄹ" and before is not None and before.coda == "ㄹ":
        return "l"
    return _ONSET[s.onset]
