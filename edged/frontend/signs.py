"""Digits, minus signs and number ranges as the Chinese, Japanese and Korean normalizers match them.

Text pasted from a weather service or a phone may write a digit in another script (٣, ３), a
minus as U+2212 (−3°C) or its full-width form (－3), an amount with thousands separators
(1,500): all folded to plain ASCII digits first, so that every rule after sees one spelling. A
range ("3-5度", "3~5°C", "40%~60%") is two numbers joined by a dash or a wave dash before a
unit: each language says it with its own word (到, から, 에서). A minus before a number is its
sign only where no digit or letter comes before it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Final

_OTHER_DIGIT: Final = re.compile(r"(?![0-9])\d")
_GROUPED: Final = re.compile(r"(?<![\d,.])\d{1,3}(?:,\d{3})+(?![\d,]|\.\d*,)")
_MINUS: Final = re.compile(r"[\u2212\uFF0D\uFE63\u2796](?=[0-9])")
NUMBER: Final = r"\d+(?:\.\d+)?"
SIGN: Final = r"(?<![0-9A-Za-z.\-])-"
"""A minus that is a number's sign: not after a digit (a range, a phone number, a date) nor
after a letter (a code such as A-1)."""
_JOIN: Final = r"\s?[-~～〜]\s?"
FAHRENHEIT: Final = re.compile(r"(-?\d+(?:\.\d+)?)\s?(?:°F|℉)")
"""A temperature in Fahrenheit (75°F): group 1 is its number."""


def plain_digits(text: str) -> str:
    """Every decimal digit as ASCII, a minus sign before a digit as '-', and no thousands
    separators (1,500 was read 一,五百 and 일,오백: one, five hundred)."""
    text = _OTHER_DIGIT.sub(lambda m: str(unicodedata.decimal(m[0])), text)
    text = _GROUPED.sub(lambda m: m[0].replace(",", ""), text)
    return _MINUS.sub("-", text)


def range_pattern(units: str) -> re.Pattern[str]:
    """Two numbers joined by a dash or a wave dash before one of `units` (a regex alternation),
    the first with the unit too or not ("3-5度", "40%~60%"): groups 1 and 3 are the numbers
    (either may be signed), 2 the first one's unit (or None), 4 the unit."""
    unit = r"(?:" + units + r")(?![A-Za-z])"
    return re.compile(r"(?<![0-9.\-])(-?" + NUMBER + r")(?:\s?(" + unit + "))?" + _JOIN
                      + "(-?" + NUMBER + r")\s?(" + unit + ")")


def read_ranges(text: str, pattern: re.Pattern[str], word: str,
                unit_twice: frozenset[str] = frozenset()) -> str:
    """Each range of `pattern` read with `word` between its numbers ("3到5度"); the unit is said
    after the first number too where it was written there, or is one of `unit_twice` ("3%到5%":
    Chinese says a percentage before its number)."""
    def read(match: re.Match[str]) -> str:
        first, first_unit, second, unit = match[1], match[2], match[3], match[4]
        if first_unit is None and unit in unit_twice:
            first_unit = unit
        return first + (first_unit or "") + word + second + unit
    return pattern.sub(read, text)


_MERIDIEM: Final = re.compile(r"(?<![\d:])(1[0-2]|0?[1-9])(?::([0-5]\d))?\s?([AaPp])\.?[Mm]\.?(?![A-Za-z])")


def meridiem_first(text: str, word: Callable[[bool, int], str], hour: str) -> str:
    """A 12-hour time with AM/PM ("7:30 PM", "7pm") as the language says it: `word(pm, hour)`
    before the time (下午, 午後, 오후; the letters were said as English names), a bare hour
    given its counter `hour` (点, 時, 시) for the rules after."""
    def read(m: re.Match[str]) -> str:
        h = int(m[1])
        before = word(m[3] in "Pp", h)
        return before + (f"{h}:{m[2]}" if m[2] else f"{h}{hour}")
    return _MERIDIEM.sub(read, text)


_CURRENCY: Final = re.compile(r"(HK\$|US\$|[$¥￥€£₩])\s?(\d+(?:\.\d+)?)")


def currency_after(text: str, names: dict[str, str]) -> str:
    """An amount whose currency sign is written before it ("$5", "¥1000") with the currency's
    name after it, as Japanese and Korean say it (5ドル, 1000円); the sign alone was not said."""
    return _CURRENCY.sub(lambda m: m[2] + names[m[1]] if m[1] in names else m[0], text)


_WAVE: Final = re.compile(r"(?<=[^\W_])\s?[~～〜]\s?(?=[^\W_])")


def wave_ranges(text: str, word: str) -> str:
    """A wave dash between two words is a range in Chinese, Japanese and Korean text (周一~周五,
    午前10時〜午後2時, 월~금): said with `word`, where it was a pause or nothing. At the end of a
    word (よろしく〜) it draws the word out, and stays."""
    return _WAVE.sub(word, text)
