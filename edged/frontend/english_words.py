"""English in Kokoro's English symbols, through espeak-ng: a whole English sentence for Kokoro's
English voices (kokoro:af_heart), and English words inside a Mandarin or Japanese sentence.

    english_phonemes("iPad") -> "ˈI pˈæd"
    english_sentence("The washing machine is finished.") -> "ðə wˈɑʃɪŋ məʃˈin ɪz fˈɪnɪʃt."

Kokoro's vocabulary has the English phonemes its English voices were trained on (misaki's
symbols: A I O W Y for the diphthongs, ʤ ʧ, T for the American flap; the British styles keep
length marks and say əʊ as Q); espeak-ng (already edged's phonemizer) gives IPA, mapped to those
symbols the way misaki's own espeak fallback maps them. misaki's English G2P itself is not used:
it needs spaCy and a spaCy model that no registry we reach ships from its authors (only
third-party re-uploads), and spaCy's memory on a Pi; espeak-ng is there already.

A brand or app name in a Chinese or Japanese announcement (你的 Amazon 包裹, Uber のドライバー)
is said by a Chinese or Japanese speaker in one breath with the rest; cut out and given to the
English voice, with a pause and a change of voice on either side, the recognizer lost the words
around it (请把 iPad 充上电 was heard as 充上电). The Mandarin voice gets those words' consonants
in its own symbols (mandarin_english.py), and such a sentence an English style mixed into its
own (synthesis/route.py, english_mix).
"""

from __future__ import annotations

import re
from typing import Final

from .phonemes import Espeak

AMERICAN: Final = "en-us"
BRITISH: Final = "en"
"""espeak-ng's own English voice is British (its `en-gb` has no voice of that name here)."""

_COMMON: Final = {"aɪ": "I", "aʊ": "W", "eɪ": "A", "ɔɪ": "Y", "dʒ": "ʤ", "tʃ": "ʧ", "r": "ɹ",
                  "ɐ": "ə", "ɬ": "l", "x": "k", "ç": "k", "ʔ": "t"}
_BY_ACCENT: Final = {
    AMERICAN: {**_COMMON, "oʊ": "O", "ɚ": "əɹ", "ɜːɹ": "ɜɹ", "ɜː": "ɜɹ", "ː": "", "ɾ": "T",
               "o": "ɔ"},
    BRITISH: {**_COMMON, "əʊ": "Q", "eə": "ɛː", "iə": "ɪə", "ɚ": "ə"},
}
_TO_KOKORO: Final = {accent: sorted(table.items(), key=lambda kv: -len(kv[0]))
                     for accent, table in _BY_ACCENT.items()}
_SYLLABIC: Final = re.compile("(\\S)\u0329")
"""A syllabic consonant (button: bˈʌʔn̩): Kokoro writes the schwa before it (tᵊn)."""
_LANG_SWITCH: Final = re.compile(r"\([^)]+\)")
"""espeak-ng marks words it reads in another language "(fr)...(en-us)": not phonemes."""
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'’]*")
_CLAUSE_END: Final = frozenset(",:;")


def to_kokoro(ipa: str, accent: str = AMERICAN) -> str:
    """espeak-ng's English IPA in Kokoro's English symbols for `accent` (AMERICAN, BRITISH)."""
    said = _SYLLABIC.sub("ᵊ\\1", _LANG_SWITCH.sub("", ipa))
    for symbol, kokoro in _TO_KOKORO[accent]:
        said = said.replace(symbol, kokoro)
    return re.sub(r"\s+", " ", said).strip()


def english_phonemes(text: str) -> str:
    """Kokoro's English symbols for the English words of `text` (anything else is dropped)."""
    words = " ".join(_WORD.findall(text))
    if not words:
        return ""
    return to_kokoro(" ".join(ipa for ipa, _ in Espeak.get().clauses(words, AMERICAN)))


def english_sentence(text: str, accent: str = AMERICAN) -> str:
    """Kokoro's English symbols for normalized English `text` (numbers already words), its
    clause and sentence punctuation kept: Kokoro pauses and intones by it."""
    out = []
    for ipa, terminator in Espeak.get().clauses(text, accent):
        said = to_kokoro(ipa, accent)
        if said or terminator:
            out.append(said + terminator + (" " if terminator in _CLAUSE_END else ""))
    return re.sub(r"\s+", " ", " ".join(out)).strip()
