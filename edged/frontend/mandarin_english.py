"""English words inside a Mandarin sentence, their consonants in the Mandarin voice's own.

    in_mandarin("ˈI pˈæd") -> "ˈI pʰˈæt"     (iPad)

A Kokoro Mandarin voice knows `p` as pinyin b (unaspirated) and `pʰ` as pinyin p: given
English's `pˈæd` it said something near its own 败, and the recognizer wrote "iPad" as 挨败.
So the consonants a Mandarin speaker keeps apart in English are given to it the way it learned
them: English p t k (aspirated, but not after s) as its pʰ tʰ k; b d g (unaspirated) as its p t k;
ʧ ʤ ʃ as its retroflexes; z v θ ð h, which Mandarin does not have, as the nearest it has. The
vowels and the stress stay English: said with Mandarin's vowels and tones instead, the
recognizer's English pass heard fewer of the words (docs/languages.md, stop 45).

A code's letters keep their English names, but those whose names start with a voiceless
stop (P, T, K, and Q) start aspirated: said with the voice's unaspirated stop, T11 was heard
as 低幺幺 and K1101 as 给1101 (stop 46). Their voiced letters stay English (B, D and G said
as the voice's p t k were heard worse: G102 as 7102).
"""

from __future__ import annotations

from typing import Final

_CONSONANTS: Final = {
    "p": "pʰ", "t": "tʰ", "k": "kʰ", "b": "p", "d": "t", "ɡ": "k", "g": "k",
    "ʧ": "ꭧʰ", "ʤ": "ꭧ", "ʃ": "ʂ", "ʒ": "ɻ", "z": "ʦ", "v": "w", "θ": "s", "ð": "t", "h": "x",
    "ʔ": ""}
"""English consonants in Kokoro's English symbols -> misaki's pinyin IPA, which the Mandarin
voices were trained on; any other symbol (vowels, stress, m n ŋ l ɹ f s w j, the flap T)
passes as it is (the flap as t: Spotify was heard as SPA的反)."""
_VOICELESS_STOPS: Final = frozenset("ptk")
"""English's p t k: aspirated, but not after s (sp, st, sk: the voice's unaspirated one), and at
the start of a code letter's name (P, T, K, Q)."""


def in_mandarin(english: str) -> str:
    """Kokoro's English symbols (english_words.english_phonemes) with the consonants that the
    Mandarin voices know by other symbols rewritten to theirs."""
    out = []
    for i, ch in enumerate(english):
        after_s = i and english[i - 1] == "s" and ch in _VOICELESS_STOPS
        out.append(ch if after_s else _CONSONANTS.get(ch, ch))
    return "".join(out)


def letter_in_mandarin(name: str) -> str:
    """A letter's English name (letters.LETTERS) with a first p, t or k aspirated."""
    return _CONSONANTS[name[0]] + name[1:] if name[:1] in _VOICELESS_STOPS else name
