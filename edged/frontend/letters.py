"""The letters of a code (G102, CA1831, 4B) as a Chinese speaker says them: their English names,
in Kokoro's English symbols (misaki's: A = eɪ, I = aɪ, O = oʊ)."""

from __future__ import annotations

from typing import Final

LETTERS: Final = {
    "A": "ˈA", "B": "bˈi", "C": "sˈi", "D": "dˈi", "E": "ˈi", "F": "ˈɛf", "G": "ʤˈi",
    "H": "ˈAʧ", "I": "ˈI", "J": "ʤˈA", "K": "kˈA", "L": "ˈɛl", "M": "ˈɛm", "N": "ˈɛn",
    "O": "ˈO", "P": "pˈi", "Q": "kjˈu", "R": "ˈɑɹ", "S": "ˈɛs", "T": "tˈi", "U": "jˈu",
    "V": "vˈi", "W": "dˈʌbəlju", "X": "ˈɛks", "Y": "wˈI", "Z": "zˈi"}
"""English letter names in Kokoro's English symbols (misaki's: A = eɪ, I = aɪ, O = oʊ)."""
