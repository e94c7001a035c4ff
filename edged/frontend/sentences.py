"""Cutting sentences into pieces for synthesis, at clause ends, then at word ends.

The splitter gets sentences already split (espeak-ng ends a sentence at . ? !), as phoneme
strings: clauses end in ", " (or ; : and dashes) and words in " ". It cuts only at whitespace,
so every piece is a run of whole tokens, keeps its own punctuation, and the pieces joined with
single spaces give back the input's tokens in order.

- ``split_long(sentence, max_units, measure)``: a sentence whose ``measure`` is above
  ``max_units`` is cut at clause ends (a token ending in , ; : or a dash, or a lone dash),
  packing as many whole clauses per piece as fit; a clause that alone is too long is cut at
  word boundaries the same way; a single word longer than ``max_units`` is its own piece.
- ``split_for_streaming(sentences, max_units, measure, first_max_units, first_min_units)``:
  all pieces in order as ``Piece(text, ends_sentence)``; the first piece may be kept shorter so
  that audio can start early (at a clause end, or with ``first_min_units`` between words).

``measure`` may be expensive (a phoneme count), so calls are kept few: one per sentence
that fits; otherwise about 1 + log2(n) per piece, found by bisection over the number of
clauses (or words) n, and no text is measured twice within one call. Bisection assumes a
longer prefix never measures less; every piece returned is one that was measured (except
single over-long words), so the bound holds either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

SENTENCE_TEXT: Final = r"(?:[^。！？.!?\n]|(?<=\d)\.(?=\d))"
"""A character inside a sentence, for the voices that cut text into sentences themselves (Kokoro,
espeak-ng): anything but an end mark, and a decimal point (38.5度 was cut into 38 and 5度, its
point never said)."""
_CLOSERS: Final = "\"')]}»”’"
_CLAUSE_END: Final = (",", ";", ":", "—", "–", "--")
_DASHES: Final = frozenset({"-", "--", "—", "–"})


@dataclass(frozen=True)
class Piece:
    """One piece of text to synthesize, in order."""

    text: str
    ends_sentence: bool
    """True on the last piece of each sentence: the caller adds the sentence pause there."""


def split_long(sentence: str, max_units: int, measure: Callable[[str], int]) -> list[str]:
    """Cut ``sentence`` into pieces with ``measure(piece) <= max_units`` where possible.

    Returns ``[sentence]`` (whitespace-normalized) after one ``measure`` call when it fits,
    ``[]`` for blank input. Raises ValueError if ``max_units`` < 1.
    """
    _check_units("max_units", max_units)
    return _split_tokens(sentence.split(), max_units, _Memo(measure))


def split_for_streaming(
    sentences: Sequence[str],
    max_units: int,
    measure: Callable[[str], int],
    first_max_units: int | None = None,
    first_min_units: int | None = None,
    first_cut_after: Callable[[str], bool] | None = None,
    first_wider_units: int | None = None,
) -> list[Piece]:
    """All pieces of ``sentences`` to synthesize, in order, each tagged with ``ends_sentence``.

    Every sentence is cut as by ``split_long``. With ``first_max_units`` (smaller than
    ``max_units``), the first piece of the first sentence is the longest run of its whole
    clauses that measures at most ``first_max_units``, so the first audio comes early; the
    rest of that sentence is then cut as usual. Without ``first_min_units`` the first piece is
    never cut inside a clause: if the first clause alone is longer, the sentence is cut as
    usual. With it, that first clause is cut between words instead (the longest run of
    words within ``first_max_units``), and no cut is made for the first piece that would
    leave it, or the rest of its sentence, measuring under ``first_min_units``: a sentence
    only a little longer than the bound is kept whole. ``first_cut_after`` (a word -> bool)
    limits that cut to after the words it accepts (Japanese: a particle, so that a number and
    its counter stay together): the last such word within the bound. With
    ``first_wider_units``, a first clause longer than ``first_max_units`` does not make the
    sentence cut as usual: the first piece is then the whole clauses within this wider bound
    (Mandarin: 40, else 60). Raises ValueError if a bound is < 1.
    """
    _check_units("max_units", max_units)
    for name, value in (("first_max_units", first_max_units),
                        ("first_min_units", first_min_units),
                        ("first_wider_units", first_wider_units)):
        if value is not None:
            _check_units(name, value)
    memo = _Memo(measure)
    pieces: list[Piece] = []
    for index, sentence in enumerate(sentences):
        tokens = sentence.split()
        if index == 0 and first_max_units is not None and first_max_units < max_units:
            parts = _split_first(tokens, (first_max_units, first_wider_units, max_units), memo,
                                 first_min_units, first_cut_after)
        else:
            parts = _split_tokens(tokens, max_units, memo)
        pieces.extend(Piece(part, i == len(parts) - 1) for i, part in enumerate(parts))
    return pieces


def _check_units(name: str, value: int) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


class _Memo:
    """``measure`` with a cache: bisection and the whole-sentence check share texts."""

    def __init__(self, measure: Callable[[str], int]) -> None:
        self._measure = measure
        self._known: dict[str, int] = {}

    def units(self, text: str) -> int:
        units = self._known.get(text)
        if units is None:
            units = self._known[text] = self._measure(text)
        return units

    def fits(self, text: str, max_units: int) -> bool:
        return self.units(text) <= max_units


def _clauses(tokens: list[str]) -> list[list[str]]:
    clauses: list[list[str]] = [[]]
    for token in tokens:
        clauses[-1].append(token)
        if token in _DASHES or token.rstrip(_CLOSERS).endswith(_CLAUSE_END):
            clauses.append([])
    if not clauses[-1]:
        clauses.pop()
    return clauses


def _split_tokens(tokens: list[str], max_units: int, memo: _Memo) -> list[str]:
    if not tokens:
        return []
    whole = " ".join(tokens)
    if memo.fits(whole, max_units):
        return [whole]
    clauses = [" ".join(clause) for clause in _clauses(tokens)]
    pieces: list[str] = []
    for group, fits in _pack(clauses, max_units, memo):
        if fits:
            pieces.append(group)
        else:  # one clause longer than the bound: cut it between words
            pieces.extend(_cut_words(group.split(), max_units, memo))
    return pieces


def _cut_words(words: list[str], max_units: int, memo: _Memo) -> list[str]:
    """Cut a clause between words into as few pieces as greedy packing needs, but of even
    length where that also fits ("set to eighteen" / "degrees," leaves a lone word)."""
    greedy = _pack(words, max_units, memo)
    texts = [text for text, _ in greedy]
    if len(greedy) < 2 or not all(fits for _, fits in greedy):
        return texts
    even = _even_cut(words, len(greedy))
    if even != texts and all(memo.fits(text, max_units) for text in even):
        return even
    return texts


def _even_cut(words: list[str], count: int) -> list[str]:
    """``words`` in ``count`` runs of about equal character length."""
    ends = []
    total = 0
    for word in words:
        total += len(word) + 1
        ends.append(total)
    cuts = [0]
    for i in range(1, count):
        target = total * i / count
        best = min(range(cuts[-1] + 1, len(words) - (count - i) + 1),
                   key=lambda k: abs(ends[k - 1] - target))
        cuts.append(best)
    cuts.append(len(words))
    return [" ".join(words[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)]


def _split_first(tokens: list[str], bounds: tuple[int, int | None, int], memo: _Memo,
                 least: int | None, after: Callable[[str], bool] | None) -> list[str]:
    """The first sentence with a short first piece: whole clauses (within the wider bound when
    none fits the short one), else (with ``least``) words; as usual when neither makes a cut
    that leaves both sides at ``least`` or more."""
    first_max, wider, max_units = bounds
    if not tokens or memo.fits(" ".join(tokens), first_max):
        return [" ".join(tokens)] if tokens else []
    clauses = _clauses(tokens)
    joined = [" ".join(clause) for clause in clauses]
    count = _longest_fit(joined, 0, first_max, memo)
    if count == 0 and wider is not None:
        count = _longest_fit(joined, 0, wider, memo)
    head = sum(len(clause) for clause in clauses[:count])  # in tokens
    if least is not None and not _both_sides(tokens, head, least, memo):
        head = _longest_fit(tokens, 0, first_max, memo)  # inside the first clause, at a word
        while after is not None and head > 0 and not after(tokens[head - 1]):
            head -= 1
        if not (_both_sides(tokens, head, least, memo)
                and memo.fits(" ".join(tokens[:head]), first_max)):
            head = 0
    if head in (0, len(tokens)):
        return _split_tokens(tokens, max_units, memo)
    return [" ".join(tokens[:head]), *_split_tokens(tokens[head:], max_units, memo)]


def _both_sides(tokens: list[str], head: int, least: int, memo: _Memo) -> bool:
    """Whether cutting before tokens[head] leaves at least ``least`` units on either side."""
    return (0 < head < len(tokens) and memo.units(" ".join(tokens[:head])) >= least
            and memo.units(" ".join(tokens[head:])) >= least)


def _pack(atoms: list[str], max_units: int, memo: _Memo) -> list[tuple[str, bool]]:
    """Greedy runs of consecutive atoms that fit, as (text, fits); an atom that does not
    fit on its own comes back alone with fits=False."""
    groups: list[tuple[str, bool]] = []
    start = 0
    while start < len(atoms):
        end = _longest_fit(atoms, start, max_units, memo)
        if end == start:
            groups.append((atoms[start], False))
            start += 1
        else:
            groups.append((" ".join(atoms[start:end]), True))
            start = end
    return groups


def _longest_fit(atoms: list[str], start: int, max_units: int, memo: _Memo) -> int:
    """The largest end such that atoms[start:end] fits (start if none), by bisection."""
    if memo.fits(" ".join(atoms[start:]), max_units):
        return len(atoms)
    low, high = start, len(atoms)  # atoms[start:low] fits (or is empty); [start:high] not
    while high - low > 1:
        middle = (low + high) // 2
        if memo.fits(" ".join(atoms[start:middle]), max_units):
            low = middle
        else:
            high = middle
    return low
