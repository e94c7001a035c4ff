"""Dates and clock times to English words (the forms are described in normalize.py)."""

from __future__ import annotations

from . import lexicon
from .numbers import cardinal, integer, ordinal, year


def date_words(month: int, day: int, year_n: int | None, order: str) -> str:
    """"mdy": "December third, twenty twenty-six"; "dmy": "the third of December, ..."."""
    name = lexicon.MONTHS[month - 1]
    words = f"{name} {ordinal(day)}" if order == "mdy" else f"the {ordinal(day)} of {name}"
    return f"{words}, {year(year_n)}" if year_n is not None else words


def slash_date(a: str, b: str, y: str | None, order: str) -> str:
    """"12/03[/2026]" in ``order``; not a valid date: "thirteen slash twenty-five"."""
    month, day = (int(a), int(b)) if order == "mdy" else (int(b), int(a))
    year_n = None if y is None else int(y) + (2000 if len(y) == 2 else 0)
    if 1 <= month <= 12 and 1 <= day <= 31:
        return date_words(month, day, year_n, order)
    if (a, b, y) == ("24", "7", None):
        return "twenty-four seven"
    return " slash ".join(integer(part) for part in (a, b, y) if part)


def time12(hour: int, minute: str | None, ampm: str) -> str:
    """"7:45 a.m." -> "seven forty-five AM" (espeak-ng spells upper-case AM/PM)."""
    suffix = "AM" if ampm[0] in "Aa" else "PM"
    return f"{_clock(hour, int(minute or 0), oclock=False)} {suffix}"


def time24(hour: int, minute: int, second: str | None) -> str:
    """"14:30" -> "fourteen thirty", "7:00" -> "seven o'clock", "0:00" -> "midnight"."""
    if minute == 0 and hour in (0, 24) and not int(second or 0):
        return "midnight"
    words = _clock(hour, minute, oclock=True)
    if second and int(second):
        words += f" and {cardinal(int(second))} second" + ("s" if int(second) > 1 else "")
    return words


def _clock(hour: int, minute: int, *, oclock: bool) -> str:
    if minute == 0:
        if not oclock:
            return cardinal(hour)
        return f"{cardinal(hour)} o'clock" if 1 <= hour <= 12 else f"{cardinal(hour)} hundred"
    if minute < 10:
        return f"{cardinal(hour)} oh {cardinal(minute)}"
    return f"{cardinal(hour)} {cardinal(minute)}"
