"""The letters of a code (G102, CA1831, 4B) as a Chinese speaker says them: their English names,
in Kokoro's English symbols (misaki's: A = eɪ, I = aɪ, O = oʊ)."""

from __future__ import annotations

import re
from typing import Final

LETTERS: Final = {
    "A": "ˈA", "B": "bˈi", "C": "sˈi", "D": "dˈi", "E": "ˈi", "F": "ˈɛf", "G": "ʤˈi",
    "H": "ˈAʧ", "I": "ˈI", "J": "ʤˈA", "K": "kˈA", "L": "ˈɛl", "M": "ˈɛm", "N": "ˈɛn",
    "O": "ˈO", "P": "pˈi", "Q": "kjˈu", "R": "ˈɑɹ", "S": "ˈɛs", "T": "tˈi", "U": "jˈu",
    "V": "vˈi", "W": "dˈʌbəlju", "X": "ˈɛks", "Y": "wˈI", "Z": "zˈi"}
"""English letter names in Kokoro's English symbols (misaki's: A = eɪ, I = aɪ, O = oʊ)."""

LATIN_RUN: Final = re.compile(r"[A-Za-z][A-Za-z'’]*")
"""A run of Latin letters inside CJK text: a code's capitals or an English word."""


def is_code(run: str) -> bool:
    """A code's capitals (G, TV, USB: said letter by letter), not an English word."""
    return run.isupper() and len(run) <= 3


def has_english_words(text: str) -> bool:
    """Whether `text` holds an English word (你的 Amazon 包裹), not only a code's letters (G102)
    or a unit written after its number (10kg, 25°C)."""
    return any(not is_code(m[0]) and text[max(m.start() - 1, 0):m.start()] not in _BEFORE_UNIT
               for m in LATIN_RUN.finditer(text))


_BEFORE_UNIT: Final = frozenset("0123456789°")
