"""English words inside a Mandarin or Japanese sentence, said by that sentence's Kokoro voice.

    english_phonemes("iPad") -> "ˈI pˈæd"

A brand or app name in a Chinese or Japanese announcement (你的 Amazon 包裹, Uber のドライバー)
is said by a Chinese or Japanese speaker in one breath with the rest; cut out and given to the
English voice, with a pause and a change of voice on either side, the recognizer lost the words
around it (请把 iPad 充上电 was heard as 充上电). Kokoro's vocabulary has the English phonemes its
English voices were trained on (misaki's symbols); espeak-ng (already edged's phonemizer) gives
the word's IPA, mapped to those symbols the way misaki's own espeak fallback maps them.
"""

from __future__ import annotations

import re
from typing import Final

from .phonemes import Espeak

_TO_KOKORO: Final = sorted({
    "aɪ": "I", "aʊ": "W", "eɪ": "A", "oʊ": "O", "ɔɪ": "Y", "dʒ": "ʤ", "tʃ": "ʧ", "ɚ": "əɹ",
    "r": "ɹ", "ɐ": "ə", "ɬ": "l", "x": "k", "ç": "k", "ː": "", "ɾ": "T", "ʔ": "t", "o": "ɔ",
}.items(), key=lambda kv: -len(kv[0]))
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'’]*")


def english_phonemes(text: str) -> str:
    """Kokoro's English symbols for the English words of `text` (anything else is dropped)."""
    words = " ".join(_WORD.findall(text))
    if not words:
        return ""
    said = " ".join(ipa for ipa, _ in Espeak.get().clauses(words, "en-us"))
    for ipa, kokoro in _TO_KOKORO:
        said = said.replace(ipa, kokoro)
    return re.sub(r"\s+", " ", said).strip()
