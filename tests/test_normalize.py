"""Tests for edged.frontend.normalize: the table of readings, the corpus reference, purity."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edged.frontend.normalize import normalize
from edged.frontend.numbers import cardinal, ordinal, year

_CORPUS_DIR = Path(__file__).resolve().parent / "data" / "corpus"
_WRITTEN = _CORPUS_DIR / "announcements_en.txt"
_SPOKEN = _CORPUS_DIR / "announcements_en_spoken.txt"

# (written, spoken) with the default date order "mdy"
_TABLE = [
    # plain text passes through unchanged
    ("The front door has been open for ten minutes.",
     "The front door has been open for ten minutes."),
    ("Is the garage closed? Yes, it is; all good!", "Is the garage closed? Yes, it is; all good!"),
    ("It is seven o'clock.", "It is seven o'clock."),
    ("Check the Wi-Fi signal.", "Check the Wi-Fi signal."),
    # cardinals
    ("0", "zero"),
    ("7 doors", "seven doors"),
    ("13", "thirteen"),
    ("45", "forty-five"),
    ("100", "one hundred"),
    ("105", "one hundred five"),
    ("1,000", "one thousand"),
    ("1,250 steps", "one thousand two hundred fifty steps"),
    ("12345", "twelve thousand three hundred forty-five"),
    ("1000000", "one million"),
    ("2,000,000,000", "two billion"),
    ("3000000000000", "three trillion"),
    ("007", "zero zero seven"),
    ("1,2", "one, two"),
    # ordinals
    ("2nd floor", "second floor"),
    ("1st", "first"),
    ("3rd", "third"),
    ("12th", "twelfth"),
    ("21st", "twenty-first"),
    ("100th", "one hundredth"),
    # decimals, signs, ranges
    ("21.5", "twenty-one point five"),
    ("0.42", "zero point four two"),
    (".5", "point five"),
    ("-3", "minus three"),
    ("It is -3 outside", "It is minus three outside"),
    ("+5", "plus five"),
    ("3-5 people", "three to five people"),
    ("3–5", "three to five"),
    ("x-5", "x-five"),
    ("2+2=4", "two plus two equals four"),
    # years
    ("in 2026", "in twenty twenty-six"),
    ("since 1999", "since nineteen ninety-nine"),
    ("in 2005", "in two thousand five"),
    ("in 1905", "in nineteen oh five"),
    ("2026 items", "two thousand twenty-six items"),
    ("2020-2026", "twenty twenty to twenty twenty-six"),
    ("the 1990s", "the nineteen nineties"),
    ("the '80s", "the eighties"),
    # percent and money
    ("15%", "fifteen percent"),
    ("10-15 %", "ten to fifteen percent"),
    ("$4.99", "four dollars and ninety-nine cents"),
    ("$1,250", "one thousand two hundred fifty dollars"),
    ("$1", "one dollar"),
    ("$0.99", "ninety-nine cents"),
    ("$1.01", "one dollar and one cent"),
    ("$1.5M", "one point five million dollars"),
    ("$2 million", "two million dollars"),
    ("£3.50", "three pounds and fifty pence"),
    ("€20", "twenty euros"),
    ("5 €", "five euros"),
    ("5-10 €", "five to ten euros"),
    # times
    ("7:45 AM", "seven forty-five AM"),
    ("at 7 AM.", "at seven AM."),
    ("3:30 pm", "three thirty PM"),
    ("5 p.m. today", "five PM today"),
    ("at 5 p.m. Then we eat.", "at five PM. Then we eat."),
    ("14:30", "fourteen thirty"),
    ("7:05", "seven oh five"),
    ("7:00", "seven o'clock"),
    ("14:00", "fourteen hundred"),
    ("00:00", "midnight"),
    ("07:15:30", "seven fifteen and thirty seconds"),
    # dates
    ("2026-12-03", "December third, twenty twenty-six"),
    ("12/03", "December third"),
    ("12/03/2026", "December third, twenty twenty-six"),
    ("12/03/26", "December third, twenty twenty-six"),
    ("13/25", "thirteen slash twenty-five"),
    ("24/7", "twenty-four seven"),
    ("December 3, 2026", "December third, twenty twenty-six"),
    ("Dec. 24", "December twenty-fourth"),
    ("3 December 2026", "the third of December, twenty twenty-six"),
    ("the 3rd of March", "the third of March"),
    ("in March 2026", "in March twenty twenty-six"),
    # temperature and units
    ("21.5°C", "twenty-one point five degrees Celsius"),
    ("-5 °F", "minus five degrees Fahrenheit"),
    ("1°C", "one degree Celsius"),
    ("20-25°C", "twenty to twenty-five degrees Celsius"),
    ("5℃", "five degrees Celsius"),
    ("30°", "thirty degrees"),
    ("50 km/h", "fifty kilometers per hour"),
    ("12.4 kWh", "twelve point four kilowatt hours"),
    ("1 kWh", "one kilowatt hour"),
    ("800 ppm", "eight hundred parts per million"),
    ("10 min", "ten minutes"),
    ("1 min", "one minute"),
    ("30 s", "thirty seconds"),
    ("5kg", "five kilograms"),
    ("3 km", "three kilometers"),
    ("2 m", "two meters"),
    ("15 cm", "fifteen centimeters"),
    ("4 mm", "four millimeters"),
    ("100 W", "one hundred watts"),
    ("3.5 kW", "three point five kilowatts"),
    ("230 V", "two hundred thirty volts"),
    ("2 h", "two hours"),
    ("1013 hPa", "one thousand thirteen hectopascals"),
    ("60 dB", "sixty decibels"),
    ("55 mph", "fifty-five miles per hour"),
    ("12 µg/m³", "twelve micrograms per cubic meter"),
    ("speed in km/h", "speed in kilometers per hour"),
    # abbreviations
    ("Dr. Smith", "Doctor Smith"),
    ("Mr. and Mrs. Jones", "Mister and Missus Jones"),
    ("St. Louis", "Saint Louis"),
    ("on Elm St.", "on Elm Street."),
    ("sensor no. 4", "sensor number four"),
    ("#4", "number four"),
    ("No. I won't.", "No. I won't."),
    ("approx. 5 min", "approximately five minutes"),
    ("fruit, e.g. apples", "fruit, for example apples"),
    ("apples, pears, etc. Then more.", "apples, pears, et cetera. Then more."),
    ("the U.S. is big", "the U-S is big"),
    # acronyms
    ("CO2", "C-O two"),
    ("PM2.5", "P-M two point five"),
    ("CO₂ is high", "C-O two is high"),
    ("H2O", "H two O"),
    ("A4 paper", "A-four paper"),
    ("5G", "five G"),
    ("USB", "U-S-B"),
    ("the TV and UV lamp", "the T-V and U-V lamp"),
    ("two LEDs", "two L-E-D's"),
    ("MQTT", "M-Q-T-T"),
    ("the HVAC", "the hvac"),
    ("WARNING: DOOR OPEN!", "warning: door open!"),
    ("OK", "okay"),
    # symbols
    ("Tom & Jerry", "Tom and Jerry"),
    ("me@example.com", "me at example dot com"),
    ("Hello 👋 world", "Hello world"),
    ("© 2026 Acme™", "two thousand twenty-six Acme"),
    ("a *b* ~c^ |d| <e>", "a b c d e"),
    ("bell\x07 ring\x00", "bell ring"),
    ("a (quiet) room", "a, quiet, room"),
    ("one - two -- three — four", "one, two, three, four"),
    ('"quoted" and \u2018single\u2019', "quoted and single"),
    ("Wait... what?!", "Wait, what?"),
    ("Line one\n\n  Line two  ", "Line one\nLine two"),
    ("on/off", "on off"),
]


def _words(text: str) -> list[str]:
    """Lower case, punctuation removed (hyphens split words), as the ASR reference is written."""
    return re.sub(r"[^\w\s']", " ", text.lower()).split()


@pytest.mark.parametrize(("written", "spoken"), _TABLE)
def test_written_form_reads_as_the_house_style_says(written: str, spoken: str) -> None:
    """Each written form reads as the table says (the house style for every category)."""
    assert normalize(written) == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("12/03", "the twelfth of March"),
        ("12/03/2026", "the twelfth of March, twenty twenty-six"),
        ("2026-12-03", "the third of December, twenty twenty-six"),
        ("03/12", "the third of December"),
        ("Dec. 3", "December third"),
    ],
)
def test_day_month_order_reads_dates_day_first(written: str, spoken: str) -> None:
    """date_order="dmy" reads numeric dates day first, in the "the third of December" form."""
    assert normalize(written, date_order="dmy") == spoken


def test_bad_date_order_is_a_clear_error() -> None:
    """An unknown date order names the accepted values instead of silently using one."""
    with pytest.raises(ValueError, match=r"date_order must be one of mdy, dmy, got 'ymd'"):
        normalize("12/03", date_order="ymd")


def test_corpus_matches_spoken_reference() -> None:
    """Every corpus line normalizes to the words of the spoken reference the ASR test scores."""
    written = _WRITTEN.read_text(encoding="utf-8").splitlines()
    spoken = _SPOKEN.read_text(encoding="utf-8").splitlines()
    assert len(written) == len(spoken) == 20
    for line, reference in zip(written, spoken, strict=True):
        assert _words(normalize(line)) == reference.split(), line


def test_dropped_symbols_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Dropped characters are named in a debug log, so a silent gap in speech can be traced."""
    with caplog.at_level(logging.DEBUG, logger="edged.frontend"):
        assert normalize("Door ✓ open") == "Door open"
    assert "\\u2713" in caplog.text


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (0, "zero"),
        (19, "nineteen"),
        (20, "twenty"),
        (999, "nine hundred ninety-nine"),
        (1_000_001, "one million one"),
        (-42, "minus forty-two"),
        (10**15, "one quadrillion"),
        (10**18, "one zero zero zero zero zero zero zero zero zero zero zero zero zero zero zero "
                 "zero zero zero"),
    ],
)
def test_cardinal_numbers_read_in_words(n: int, words: str) -> None:
    """Cardinals from zero to quadrillions; beyond that, digit by digit."""
    assert cardinal(n) == words


@pytest.mark.parametrize(
    ("n", "words"),
    [(2, "second"), (5, "fifth"), (9, "ninth"), (20, "twentieth"), (22, "twenty-second"),
     (101, "one hundred first"), (1000, "one thousand"+"th")],
)
def test_ordinal_numbers_read_in_words(n: int, words: str) -> None:
    """Ordinals change only the last word, including irregular ones."""
    assert ordinal(n) == words


@pytest.mark.parametrize(
    ("n", "words"),
    [(2026, "twenty twenty-six"), (2000, "two thousand"), (2009, "two thousand nine"),
     (2010, "twenty ten"), (1900, "nineteen hundred"), (1066, "ten sixty-six"),
     (999, "nine hundred ninety-nine")],
)
def test_years_read_in_pairs(n: int, words: str) -> None:
    """Years read in pairs, with the "two thousand" decade and "oh" for single digits."""
    assert year(n) == words


_PIECES = st.sampled_from(
    list("abcXYZ 019.,:;!?-+%$°/&@#'\"()\n")
    + ["km", "kWh", "AM", "pm", "Dr.", "CO2", "🙂", "™", "\x00", "é", "²", "½", "—", "…", "e.g."]
)
_TOKENS = st.sampled_from(
    ["door", "Open", "WARNING", "USB", "CO2", "PM2.5", "12.4", "kWh", "15%", "$4.99", "-3",
     "3-5", "7:45", "AM", "14:30", "2026-12-03", "12/03", "in", "2026", "Dr.", "Smith", "St.",
     "No.", "4", "approx.", "e.g.", "etc.", "21.5°C", "&", "@", "+", "🙂", "(a)", "—", "2nd",
     "1,250", "LEDs", "Wi-Fi", "o'clock", "#3", "Main", "x2", "U.S.", "...", "?", "!", ",", "\n"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_output_is_always_speakable(text: str) -> None:
    """For any characters glued in any order: no digit or stray symbol survives, so the
    phonemizer never reads garbage, and the result has no outer whitespace."""
    out = normalize(text)
    assert not re.search(r"[0-9]|[^\w\s.,?!:;'\-]|_", out), out
    assert out == out.strip()


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=30).map(" ".join))
def test_normalizing_twice_changes_nothing(text: str) -> None:
    """Normalized text is a fixed point for realistic (space-separated) input, so text that
    was normalized before (e.g. a cached phrase list) reads the same."""
    out = normalize(text)
    assert normalize(out) == out
