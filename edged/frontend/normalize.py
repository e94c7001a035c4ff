"""English text normalization: written announcement -> words a phonemizer can read.

``normalize(text, date_order)`` is pure and fast (one regex pass for numbers, dates,
units and abbreviations, then a symbol and cleanup pass). Readings, by example:

- numbers: "1,250" -> "one thousand two hundred fifty"; "-3" -> "minus three"; "21.5" ->
  "twenty-one point five"; "2nd" -> "second"; "3-5" -> "three to five"; "007" -> digits;
  a 4-digit number after "in", "since", "until", "before", "after", "during", "from",
  "year" or a month name is a year: "in 2026" -> "in twenty twenty-six".
- units and money: "15%" -> "fifteen percent"; "21.5°C" -> "twenty-one point five degrees
  Celsius"; "12.4 kWh" -> "twelve point four kilowatt hours" (singular only for exactly 1);
  "$4.99" -> "four dollars and ninety-nine cents"; "$1.5M" -> "one point five million dollars".
- times: "7:45 AM" -> "seven forty-five AM"; "7 p.m." -> "seven PM"; "14:30" -> "fourteen
  thirty"; "7:05" -> "seven oh five"; "7:00" -> "seven o'clock"; "14:00" -> "fourteen
  hundred". AM/PM stay upper case: espeak-ng spells them ("a m" would read "a" as the article).
- dates, one consistent form per ``date_order``: "mdy" -> "December third, twenty twenty-six";
  "dmy" -> "the third of December, twenty twenty-six". ISO "2026-12-03" and numeric "12/03"
  or "12/03/2026" are read in that form; "12/03" is December 3 under "mdy" and 12 March
  under "dmy". Written-out dates keep their own order ("3 December" -> "the third of
  December", "Dec. 3" -> "December third").
- abbreviations: "Dr." -> "Doctor", "St." -> "Saint" (or "Street" after a name or number),
  "No. 4" -> "number four", "approx." -> "approximately", "e.g." -> "for example", "etc." ->
  "et cetera" (a period that also ended the sentence is kept).
- acronyms: letter by letter, joined by hyphens so espeak-ng says letter names ("USB" ->
  "U-S-B"; "A" alone would read as the article): known ones (lexicon.SPELLED), all-caps words
  without a vowel, and letters next to digits ("CO2" -> "C-O two", "PM2.5" -> "P-M two point
  five"). Other all-caps words are lower-cased ("WARNING" -> "warning").
- symbols: "&" -> "and", "@" -> "at", "+" -> "plus", "=" -> "equals", "#4" -> "number four";
  dashes and brackets become commas; quotes vanish; anything else that is not a letter or
  sentence punctuation (. , ? ! : ;) is dropped with a debug log (emoji, ©, ™, *, ~, ^, |, <,
  >, control characters). Newlines are kept (they separate sentences); other whitespace
  collapses to single spaces.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from typing import Final

from . import lexicon
from .dates import date_words, slash_date, time12, time24
from .numbers import cardinal, decimal, digits, integer, money, ordinal, year
from .symbols import clean_symbols, drop_unspeakable

_LOGGER = logging.getLogger(__name__)

NORMALIZER_VERSION: Final[str] = "1"
"""Bump whenever normalize() output changes for some input (it is part of the cache key)."""

DATE_ORDERS: Final = ("mdy", "dmy")

_PRE: Final = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u2212": "-", "\u2010": "-", "\u2011": "-",
    "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u2007": " ", "\t": " ", "\r": "\n",
    "\u00ad": "", "\u200b": "", "\ufeff": "", "_": " ", "\u03bc": "\u00b5",
    "\u2103": "°C", "\u2109": "°F", "\u00ba": "°",
    **{chr(0x2080 + i): str(i) for i in range(10)},  # subscript digits: CO₂
    "\u00b2": "2", "\u00b3": "3",  # m² -> m2 (a unit); x² -> x2 ("X two")
})

_NUM: Final = r"(?:(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)"
_MON: Final = "|".join(lexicon.MONTHS) + "|(?:" + "|".join(lexicon.MONTH_ABBREVIATIONS) + r")\.?"
_UNIT: Final = "|".join(re.escape(u) for u in sorted(lexicon.UNITS, key=len, reverse=True))
_SU: Final = "|".join(re.escape(u) for u in lexicon.STANDALONE_UNITS)
_ABBR: Final = "|".join(re.escape(a) for a in lexicon.ABBREVIATIONS)
_TOKEN: Final = re.compile(
    # Every branch but the last two starts at a word start (letter branches also right after a
    # digit: "5Dr."), and each group of branches is gated by a cheap look-ahead, so most
    # positions fail after one or two checks (speed).
    rf"""
    (?<!\w)(?:
    (?=[0-9.+-])(?:
        (?P<iso_y>[0-9]{{4}})-(?P<iso_m>0?[1-9]|1[0-2])-(?P<iso_d>0?[1-9]|[12][0-9]|3[01])
            (?![\w-])
        |(?<![-/.])(?P<sd_a>[0-9]{{1,2}})/(?P<sd_b>[0-9]{{1,2}})
            (?:/(?P<sd_y>[0-9]{{4}}|[0-9]{{2}}))?(?![\w/]|\.[0-9])
        |(?<![:.])(?P<t_h>1[0-2]|0?[1-9])(?:[:.](?P<t_m>[0-5][0-9]))?\ ?
            (?P<t_ap>[AaPp]\.[Mm]\.?|[AaPp][Mm])(?!\w)
        |(?<![:.])(?P<h_h>[01]?[0-9]|2[0-4]):(?P<h_m>[0-5][0-9])(?::(?P<h_s>[0-5][0-9]))?
            (?![\w:]|\.[0-9])
        |(?<!\.)(?P<dm_d>[0-9]{{1,2}})(?:st|nd|rd|th)?\ (?:of\ )?(?P<dm_mon>{_MON})(?!\w)
            (?:,?\ (?P<dm_y>[0-9]{{4}})(?!\w))?
        |(?<!')(?P<dec>1[0-9][0-9]0|20[0-9]0)s(?!\w)
        |(?<!\.)(?P<ord>[0-9]{{1,3}}(?:,[0-9]{{3}})+|[0-9]+)(?P<ord_s>st|nd|rd|th)(?!\w)
        |(?<!\.)(?P<dots>[0-9]+(?:\.[0-9]+){{2,}})(?![\w]|\.[0-9])
        |(?P<q_sign>(?<![^\s(\[/])[-+])?(?<![\w.])(?P<q_n>{_NUM})
            (?:(?P<q_to>\ ?–\ ?|-|\ to\ )(?P<q_n2>{_NUM}))?
            (?:\ ?(?P<q_u>{_UNIT})(?![\w/]))?
    )
    |(?P<cur>[$£€¥])(?P<cur_n>{_NUM})
        (?:(?P<cur_x>[kKMB]|bn)|\ (?P<cur_w>thousand|million|billion|trillion))?(?!\w)
    |'(?P<dec2>[0-9]0)s(?!\w)
    |(?P<hash>\#)(?=\ ?[0-9])
    )
    |(?<![^\W\d])(?=[A-Z°µ]|[a-z]++[.0-9/]|(?:{_SU})(?![\w/]))(?:
        (?P<md_mon>{_MON})\ (?P<md_d>[0-9]{{1,2}})(?:st|nd|rd|th)?(?!\w)
            (?:,?\ (?P<md_y>[0-9]{{4}})(?!\w))?
        |(?<!\.)(?P<mix>[A-Za-z]+[0-9][A-Za-z0-9]*(?:\.[0-9]+)?)(?![\w]|\.[0-9])
        |(?<!\.)(?P<title>Mrs|Mr|Ms|Dr|St)(?P<title_dot>\.)?(?!\w)
        |(?<!\.)(?P<no>[Nn]o)\.(?=\ ?[0-9])
        |(?<!\.)(?P<abbr>(?i:{_ABBR}))\.(?!\w)
        |(?<!\.)(?P<init>(?:[A-Za-z]\.){{2,}})(?!\w)
        |(?<!')(?P<caps>[A-Z]{{2,}}|IoT)(?P<caps_pl>'?s)?(?![\w'])
        |(?<![/°])(?P<su>{_SU})(?![\w/])
    )
    |\.(?<=\w\.)(?P<tld>{"|".join(lexicon.TLDS)})\b
    |(?P<digits>[0-9]+)
    """,
    re.VERBOSE,
)
_YEAR_CONTEXT: Final = re.compile(
    rf"(?:\b(?:[Ii]n|[Ss]ince|[Uu]ntil|[Tt]ill|[Bb]efore|[Aa]fter|[Dd]uring|[Ff]rom|[Yy]ear"
    rf"|{_MON})|[0-9](?:st|nd|rd|th)?,) $"
)
_SENTENCE_FOLLOWS: Final = re.compile(r"[ ]*(?:$|\n|[ ]+[A-Z])")
_NAME_BEFORE: Final = re.compile(r"(?:\b[A-Z][a-z]+|[0-9](?:st|nd|rd|th)?) $")
_NAME_AFTER: Final = re.compile(
    # a capitalized word that is probably a name, not the start of the next sentence
    r" (?!(?:He|She|It|They|We|I|You|The|This|That|There|Please|Then|Now)\b)[A-Z]"
)
_THE_BEFORE: Final = re.compile(r"\b[Tt]he $")


def normalize(text: str, date_order: str = "mdy") -> str:
    """Rewrite ``text`` as plain words and sentence punctuation (see the module docstring).

    Raises ValueError if ``date_order`` is not "mdy" or "dmy".
    """
    if date_order not in DATE_ORDERS:
        raise ValueError(f"date_order must be one of {', '.join(DATE_ORDERS)}, got {date_order!r}")
    text = drop_unspeakable(unicodedata.normalize("NFC", text).translate(_PRE))
    text = _TOKEN.sub(lambda m: _spaced(m, _read(m, date_order)), text)
    return clean_symbols(text)


def _spaced(m: re.Match[str], words: str) -> str:
    """Keep replacement words from gluing onto neighbours ("5G" -> "five G")."""
    s = m.string
    if m.start() > 0 and s[m.start() - 1].isalnum() and words[:1].isalnum():
        words = " " + words
    if m.end() < len(s) and s[m.end()].isalnum() and words[-1:].isalnum():
        words += " "
    return words


def _read(m: re.Match[str], date_order: str) -> str:
    g = m.group
    if g("iso_y"):
        return date_words(int(g("iso_m")), int(g("iso_d")), int(g("iso_y")), date_order)
    if g("sd_a"):
        return slash_date(g("sd_a"), g("sd_b"), g("sd_y"), date_order)
    if g("t_h"):
        return time12(int(g("t_h")), g("t_m"), g("t_ap")) + _period_if_ended(m, g("t_ap"))
    if g("h_h"):
        return time24(int(g("h_h")), int(g("h_m")), g("h_s"))
    if g("cur"):
        return money(g("cur"), g("cur_n"), g("cur_x") or g("cur_w"))
    if g("md_mon"):
        month = lexicon.MONTH_NUMBERS[g("md_mon").rstrip(".")]
        return date_words(month, int(g("md_d")), _int(g("md_y")), "mdy")
    if g("dm_mon"):
        month = lexicon.MONTH_NUMBERS[g("dm_mon").rstrip(".")]
        words = date_words(month, int(g("dm_d")), _int(g("dm_y")), "dmy")
        if _THE_BEFORE.search(m.string, max(0, m.start() - 4), m.start()):
            words = words.removeprefix("the ")  # "the 3rd of March"
        return words + _period_if_ended(m, g("dm_mon"))
    if g("dec") or g("dec2"):
        words = year(int(g("dec"))) if g("dec") else cardinal(int(g("dec2")))
        return words[:-1] + "ies" if words.endswith("y") else words + "s"
    if g("ord"):
        return ordinal(int(g("ord").replace(",", "")))
    if g("dots"):
        return " dot ".join(integer(part) for part in g("dots").split("."))
    if g("q_n"):
        return _quantity(m)
    if g("mix"):
        return _mixed(g("mix"))
    if g("title"):
        return _title(m)
    if g("no"):
        return "Number" if g("no")[0] == "N" else "number"
    if g("abbr"):
        spoken, may_end = lexicon.ABBREVIATIONS[g("abbr").lower()]
        if g("abbr")[0].isupper():
            spoken = spoken[0].upper() + spoken[1:]
        return spoken + (_period_if_ended(m, ".") if may_end else "")
    if g("init"):
        return "-".join(g("init").replace(".", "").upper()) + _period_if_ended(m, ".")
    if g("caps"):
        return _caps(g("caps"), g("caps_pl"))
    if g("su"):
        return lexicon.UNITS[g("su")][1]
    if g("tld"):
        return " dot " + g("tld")
    if g("hash"):
        return "number "
    return integer(g("digits"))


def _int(text: str | None) -> int | None:
    return int(text) if text else None


def _period_if_ended(m: re.Match[str], consumed: str) -> str:
    """The match ate a final "." that also ended the sentence: give it back."""
    if consumed.endswith(".") and _SENTENCE_FOLLOWS.match(m.string, m.end()):
        return "."
    return ""


def _quantity(m: re.Match[str]) -> str:
    g = m.group
    sign = {"-": "minus ", "+": "plus "}.get(g("q_sign") or "", "")
    first, second, unit = g("q_n"), g("q_n2"), g("q_u")
    if unit == "€":  # written after the amount: "5 €", "5-10 €"
        if second is not None:
            return f"{sign}{decimal(first)} to {money(unit, second, None)}"
        return sign + money(unit, first, None)
    if second is not None:
        if g("q_to") == "-" and not unit and len(first) == 3 and len(second) == 4:
            return f"{digits(first)}, {digits(second)}"  # a phone number: 555-1234
        if _is_year(first) and _is_year(second) and not unit:
            return f"{sign}{year(int(first))} to {year(int(second))}"
        words = f"{sign}{decimal(first)} to {decimal(second)}"
    elif not sign and not unit and _is_year(first) and _YEAR_CONTEXT.search(
        m.string, max(0, m.start() - 16), m.start()
    ):
        return year(int(first))
    else:
        words = sign + decimal(first)
    if unit:
        singular, plural = lexicon.UNITS[unit]
        words += " " + (singular if first == "1" and second is None else plural)
    return words


def _is_year(number: str) -> bool:
    return len(number) == 4 and number.isdigit() and 1100 <= int(number) <= 2099


def _mixed(token: str) -> str:
    """Letters and digits in one token: "CO2" -> "C-O two", "A4" -> "A-four"."""
    parts = []
    for run in re.findall(r"[A-Za-z]+|[0-9]+(?:\.[0-9]+)?", token):
        if run[0].isdigit():
            parts.append(decimal(run))
        elif run.isupper() or run.upper() in lexicon.SPELLED or not _has_vowel(run):
            parts.append("-".join(run.upper()))
        else:
            parts.append(run)
    words = parts[0]
    for previous, part in zip(parts, parts[1:], strict=False):
        words += ("-" if previous == "A" else " ") + part
    return words


def _has_vowel(word: str) -> bool:
    return any(ch in "AEIOUYaeiouy" for ch in word)


def _caps(word: str, plural: str | None) -> str:
    if word in lexicon.KEEP_UPPER:
        return word + (plural or "")
    if word == "OK":
        return "okay"
    if word.upper() in lexicon.SPELLED or not _has_vowel(word):
        return "-".join(word.upper()) + ("'s" if plural else "")
    return word.lower() + (plural or "")


def _title(m: re.Match[str]) -> str:
    title = m.group("title")
    s = m.string
    if (
        title in lexicon.STREET_READINGS
        and _NAME_BEFORE.search(s, max(0, m.start() - 20), m.start())
        and not _NAME_AFTER.match(s, m.end())
    ):
        return lexicon.STREET_READINGS[title] + _period_if_ended(m, m.group("title_dot") or "")
    return lexicon.TITLES[title]
