"""Tests for edged.frontend.sentences: clause and streaming splits of (phonemized) sentences."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edged.frontend.sentences import Piece, split_for_streaming, split_long

_LONG = (
    "All doors are locked, the thermostat is set to eighteen degrees, "
    "and the security cameras are recording."
)


class _Counting:
    """A measure (character count) that records what it was asked, to pin the call budget."""

    def __init__(self, measure: Callable[[str], int] = len) -> None:
        self.calls: list[str] = []
        self._measure = measure

    def __call__(self, text: str) -> int:
        self.calls.append(text)
        return self._measure(text)


# --- split_long ------------------------------------------------------------------------


def test_fitting_sentence_is_one_piece_after_one_measure() -> None:
    """A sentence within the bound comes back whole, for the price of a single measure."""
    measure = _Counting()
    assert split_long(_LONG, 200, measure) == [_LONG]
    assert measure.calls == [_LONG]


def test_long_sentence_is_cut_at_commas() -> None:
    """Over the bound, whole clauses are packed greedily, each keeping its comma."""
    assert split_long(_LONG, 70, len) == [
        "All doors are locked, the thermostat is set to eighteen degrees,",
        "and the security cameras are recording.",
    ]


@pytest.mark.parametrize(
    ("sentence", "pieces"),
    [
        ("first part; second part", ["first part;", "second part"]),
        ("Warning: smoke detected", ["Warning:", "smoke detected"]),
        ("lights off - doors locked", ["lights off -", "doors locked"]),
        ("lights off — doors locked", ["lights off —", "doors locked"]),
        ("lights off— doors locked", ["lights off—", "doors locked"]),
        ('he said "off," and left', ['he said "off,"', "and left"]),
    ],
)
def test_clauses_end_at_semicolons_colons_and_dashes(sentence: str, pieces: list[str]) -> None:
    """Semicolons, colons, spaced or trailing dashes and quoted commas end clauses too."""
    assert split_long(sentence, 16, len) == pieces


def test_hyphen_inside_a_word_is_not_a_clause_end() -> None:
    """"Wi-Fi" and "twenty-one" are single words: no cut inside them."""
    assert split_long("the Wi-Fi twenty-one", 12, len) == ["the Wi-Fi", "twenty-one"]


def test_overlong_clause_is_cut_between_words_evenly() -> None:
    """A clause longer than the bound is cut between words into as few pieces as needed,
    evened out so that no lone trailing word is left ("degrees,")."""
    assert split_long(_LONG, 40, len) == [
        "All doors are locked,",
        "the thermostat is set",
        "to eighteen degrees,",
        "and the security cameras are recording.",
    ]


def test_overlong_word_is_its_own_piece() -> None:
    """A single word longer than the bound cannot be cut: it is returned alone, not dropped."""
    assert split_long("a b supercalifragilistic c d", 5, len) == [
        "a b", "supercalifragilistic", "c d",
    ]


def test_blank_sentence_gives_no_pieces() -> None:
    """Whitespace alone produces no piece (never an empty string to synthesize)."""
    assert split_long("   ", 10, len) == []


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_bad_bound_is_a_clear_error(bad: object) -> None:
    """A bound below one unit is a programming error, reported with its name."""
    with pytest.raises(ValueError, match="max_units must be an integer >= 1"):
        split_long("a b", bad, len)  # type: ignore[arg-type]


def test_measure_runs_about_log_n_times_per_piece() -> None:
    """measure runs about 1 + log2(n) times per piece and never twice on the same text."""
    clauses = [f"clause number {i:02d} is here," for i in range(32)]  # 25 characters each
    sentence = " ".join(clauses)
    measure = _Counting()
    pieces = split_long(sentence, 103, measure)
    assert len(pieces) == 8  # four clauses and three spaces per piece
    assert len(measure.calls) == len(set(measure.calls))
    assert len(measure.calls) <= 1 + len(pieces) * (1 + 5)


def test_non_monotonic_measure_still_respects_the_bound() -> None:
    """Even when a longer text can measure less, every piece returned was measured within
    the bound (bisection only ever accepts measured fits)."""

    def bumpy(text: str) -> int:
        return len(text) * (3 if len(text) % 4 == 0 else 1)

    pieces = split_long(_LONG, 30, bumpy)
    assert " ".join(pieces).split() == _LONG.split()
    assert all(bumpy(piece) <= 30 or " " not in piece for piece in pieces)


# --- split_for_streaming ---------------------------------------------------------------


def test_streaming_tags_sentence_ends() -> None:
    """Every sentence's last piece, and only it, ends a sentence."""
    pieces = split_for_streaming(["Good night.", _LONG], 70, len)
    assert pieces == [
        Piece("Good night.", True),
        Piece("All doors are locked, the thermostat is set to eighteen degrees,", False),
        Piece("and the security cameras are recording.", True),
    ]


def test_streaming_first_piece_is_a_short_clause() -> None:
    """With first_max_units the first piece is the leading clause(s) within that bound;
    the rest of the sentence is packed with the normal bound."""
    pieces = split_for_streaming([_LONG, "Bye."], 200, len, first_max_units=25)
    assert pieces == [
        Piece("All doors are locked,", False),
        Piece("the thermostat is set to eighteen degrees, and the security cameras are "
              "recording.", True),
        Piece("Bye.", True),
    ]


def test_streaming_first_bound_only_applies_to_the_first_sentence() -> None:
    """Later sentences use max_units: only the start of the audio needs to be early."""
    pieces = split_for_streaming(["Hi.", _LONG], 200, len, first_max_units=25)
    assert [piece.text for piece in pieces] == ["Hi.", _LONG]


def test_streaming_first_clause_is_never_cut_for_latency() -> None:
    """If the first clause alone exceeds first_max_units, the sentence is cut as usual
    rather than mid-clause (a mid-phrase break sounds wrong)."""
    pieces = split_for_streaming([_LONG], 200, len, first_max_units=10)
    assert pieces == [Piece(_LONG, True)]


def test_streaming_first_clause_over_the_bound_takes_the_wider_bound() -> None:
    """With first_wider_units (Kokoro's Mandarin: 40, else 60), a first clause over the short
    bound is not a reason to cut the sentence as usual: the whole clauses within the wider
    bound are the first piece; still never cut mid-clause."""
    pieces = split_for_streaming([_LONG], 200, len, first_max_units=10, first_wider_units=50)
    assert [piece.text for piece in pieces] == [
        "All doors are locked,",
        "the thermostat is set to eighteen degrees, and the security cameras are recording."]
    pieces = split_for_streaming([_LONG], 200, len, first_max_units=10, first_wider_units=15)
    assert pieces == [Piece(_LONG, True)]  # no clause within either bound: as usual


def test_streaming_first_clause_too_long_is_cut_between_words() -> None:
    """With first_min_units (Kokoro), a first clause over the first bound is cut after the last
    word that fits; that piece is no sentence end (no pause after it) and the rest of the
    sentence is packed as before."""
    pieces = split_for_streaming([_LONG, "Bye."], 200, len, first_max_units=10,
                                 first_min_units=3)
    assert pieces == [
        Piece("All doors", False),
        Piece(_LONG.removeprefix("All doors "), True),
        Piece("Bye.", True),
    ]


def test_streaming_first_cut_only_after_accepted_words() -> None:
    """With first_cut_after, the word cut ends after the last accepted word within the bound
    (Japanese: a particle), and there is no cut when none is."""
    words = "kʲoː βa ʥɨːɲiɡaʦɨ ɲiʥɨː joʔka desɨ."
    after = {"βa", "ɡa"}.__contains__
    assert [p.text for p in split_for_streaming([words], 100, len, 25, 5, after)] == \
        ["kʲoː βa", "ʥɨːɲiɡaʦɨ ɲiʥɨː joʔka desɨ."]
    assert split_for_streaming([words], 100, len, 25, 5, {"ɡa"}.__contains__) == \
        [Piece(words, True)]


def test_streaming_first_cut_prefers_a_clause_end() -> None:
    """Where whole clauses fit the first bound, the first piece ends at a clause, as without
    first_min_units."""
    assert split_for_streaming([_LONG], 200, len, 25, 3) == split_for_streaming([_LONG], 200,
                                                                                len, 25)


@pytest.mark.parametrize("sentence", ["Doors locked.", "All doors are locked."])
def test_streaming_short_first_sentence_is_not_cut(sentence: str) -> None:
    """A sentence within the first bound, or only a little over it (a cut would leave a side
    under first_min_units: "All doors are" / "locked."), is one piece."""
    assert split_for_streaming([sentence], 200, len, 18, 8) == [Piece(sentence, True)]


def test_streaming_first_bound_above_max_is_ignored() -> None:
    """A first bound at or above max_units changes nothing."""
    assert split_for_streaming([_LONG], 70, len, 500) == split_for_streaming([_LONG], 70, len)


def test_streaming_empty_text() -> None:
    """No sentences, or blank ones, give no pieces."""
    assert split_for_streaming([], 10, len, 5) == []
    assert split_for_streaming([" ", " \t "], 10, len, 5) == []


def test_streaming_bad_first_bound() -> None:
    """A bad first bound is reported by name."""
    with pytest.raises(ValueError, match="first_max_units must be an integer >= 1"):
        split_for_streaming(["a"], 10, len, 0)
    with pytest.raises(ValueError, match="first_min_units must be an integer >= 1"):
        split_for_streaming(["a"], 10, len, 5, 0)


def test_streaming_measures_each_fitting_sentence_once() -> None:
    """The cheap path: sentences within the bound cost one measure each."""
    measure = _Counting()
    split_for_streaming(["One.", "Two three.", "Four!"], 100, measure, first_max_units=50)
    assert measure.calls == ["One.", "Two three.", "Four!"]


# --- properties ------------------------------------------------------------------------

_WORDS = st.sampled_from(
    ["a", "door", "is", "open", "supercalifragilistic", "21.5", "Dr.", "No.", "e.g.", "U.S.",
     "end.", "end!", "why?", "so,", "then;", "note:", "-", "—", "Wi-Fi", '"quoted."', "(x)",
     "...", "Capital", "5"]
)
_SPACE = st.sampled_from([" ", "  ", "\t"])
_MEASURES: list[Callable[[str], int]] = [
    len,
    lambda text: 2 * len(text.replace(" ", "")) + 3 * text.count(","),  # phoneme-like
    lambda text: len(text) * (3 if len(text) % 5 == 0 else 1),  # not monotonic
]


@st.composite
def _texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORDS, max_size=40))
    text = ""
    for word in words:
        text += word + draw(_SPACE)
    return text


@settings(max_examples=300, deadline=None)
@given(_texts(), st.integers(1, 60), st.sampled_from(_MEASURES))
def test_split_long_keeps_every_word_in_bound(
    sentence: str, max_units: int, measure: Callable[[str], int]
) -> None:
    """Pieces re-joined give all words in order; no piece is empty or padded; each piece is
    within the bound unless it is a single word."""
    pieces = split_long(sentence, max_units, measure)
    assert " ".join(pieces).split() == sentence.split()
    for piece in pieces:
        assert piece and piece == piece.strip()
        assert measure(piece) <= max_units or len(piece.split()) == 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_texts(), max_size=5),
    st.integers(1, 60),
    st.one_of(st.none(), st.integers(1, 60)),
    st.sampled_from(_MEASURES),
)
def test_streaming_keeps_every_word_in_bound(
    sentences: list[str], max_units: int, first_max: int | None, measure: Callable[[str], int]
) -> None:
    """Streaming pieces re-joined give all words in order, one sentence end per non-blank
    sentence (the last piece ends one), and every multi-word piece is within max_units."""
    pieces = split_for_streaming(sentences, max_units, measure, first_max)
    text = " ".join(sentences)
    assert " ".join(piece.text for piece in pieces).split() == text.split()
    assert sum(piece.ends_sentence for piece in pieces) == sum(1 for s in sentences if s.strip())
    assert not pieces or pieces[-1].ends_sentence
    for piece in pieces:
        assert piece.text and (measure(piece.text) <= max_units or " " not in piece.text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_texts(), min_size=1, max_size=3),
    st.integers(2, 60),
    st.integers(1, 30),
    st.integers(1, 12),
    st.sampled_from(_MEASURES),
    st.sampled_from([None, {"a", "is", "so,"}.__contains__]),
)
def test_streaming_short_first_piece(
    sentences: list[str], max_units: int, first_max: int, first_min: int,
    measure: Callable[[str], int], after: Callable[[str], bool] | None
) -> None:
    """With both first bounds: the first sentence is either cut as usual, or one first piece
    within first_max (both sides of the cut measuring first_min or more) followed by its rest
    cut as usual; later sentences are cut as usual."""
    pieces = split_for_streaming(sentences, max_units, measure, first_max, first_min, after)
    usual = split_for_streaming(sentences, max_units, measure)
    assert " ".join(p.text for p in pieces).split() == " ".join(sentences).split()
    if pieces == usual:
        return
    first, rest = pieces[0].text, " ".join(sentences[0].split()[len(pieces[0].text.split()):])
    assert not pieces[0].ends_sentence and first_max < max_units
    assert first_min <= measure(first) <= first_max and measure(rest) >= first_min
    assert after is None or after(first.split()[-1]) or first.endswith((",", ";", ":", "-", "—"))
    after = split_for_streaming([rest, *sentences[1:]], max_units, measure)
    assert pieces[1:] == after


def test_a_decimal_point_does_not_end_a_sentence() -> None:
    """Kokoro and espeak-ng cut text into sentences themselves: 体温は38.5度です was said as two,
    38 and 5度, the point never said."""
    from edged.voice.espeak import _SENTENCES
    from edged.voice.kokoro.voice import _SENTENCE

    assert _SENTENCE.findall("体温は38.5度です。次は3.です.") == ["体温は38.5度です。", "次は3.", "です."]
    assert [s.strip() for s in _SENTENCES.findall("体温は38.5度です。It is 1.5. Done")] == \
        ["体温は38.5度です。", "It is 1.5.", "Done"]
