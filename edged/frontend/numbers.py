"""Numbers to English words: cardinals, ordinals, decimals, digit strings, years.

American style without "and": 1250 -> "one thousand two hundred fifty". Compound tens keep
their hyphen ("twenty-one"); espeak-ng reads them as one word.
"""

from __future__ import annotations

from typing import Final

from . import lexicon

_ONES: Final = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
]
_TENS: Final = [
    "_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
]
_SCALES: Final = ((10**15, "quadrillion"), (10**12, "trillion"), (10**9, "billion"),
                  (10**6, "million"), (10**3, "thousand"))
MAX_CARDINAL: Final = 10**18 - 1
"""Largest number read as a cardinal; longer digit strings are read digit by digit."""

_ORDINAL_IRREGULAR: Final = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
    "nine": "ninth", "twelve": "twelfth",
}


def _below_thousand(n: int) -> str:
    words = []
    if n >= 100:
        words.append(f"{_ONES[n // 100]} hundred")
        n %= 100
        if n == 0:
            return words[0]
    if n < 20:
        words.append(_ONES[n])
    else:
        tens, ones = divmod(n, 10)
        words.append(_TENS[tens] + (f"-{_ONES[ones]}" if ones else ""))
    return " ".join(words)


def cardinal(n: int) -> str:
    """Read an integer: -3 -> "minus three"; beyond MAX_CARDINAL, digit by digit."""
    if n < 0:
        return "minus " + cardinal(-n)
    if n > MAX_CARDINAL:
        return digits(str(n))
    if n < 1000:
        return _below_thousand(n)
    words = []
    for value, name in _SCALES:
        if n >= value:
            count, n = divmod(n, value)
            words.append(f"{_below_thousand(count)} {name}")
    if n:
        words.append(_below_thousand(n))
    return " ".join(words)


def ordinal(n: int) -> str:
    """Read an ordinal: 2 -> "second", 21 -> "twenty-first", 100 -> "one hundredth"."""
    words = cardinal(n)
    head, sep, last = words.rpartition("-" if "-" in words.rsplit(" ", 1)[-1] else " ")
    if last in _ORDINAL_IRREGULAR:
        last = _ORDINAL_IRREGULAR[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return head + sep + last


def digits(text: str) -> str:
    """Read a string of ASCII digits one by one: "007" -> "zero zero seven"."""
    return " ".join(_ONES[int(ch)] for ch in text)


def integer(text: str) -> str:
    """Read an integer written with optional thousands commas ("1,250").

    A leading zero ("007", "05") means an identifier: read digit by digit.
    """
    plain = text.replace(",", "")
    if len(plain) > 1 and plain.startswith("0"):
        return digits(plain)
    return cardinal(int(plain))


def decimal(text: str) -> str:
    """Read a number with an optional fraction: "21.5" -> "twenty-one point five".

    The integer part may have thousands commas; fraction digits are read one by one
    (".42" -> "zero point four two" is written "0.42"; a bare ".5" reads "point five").
    """
    whole, _, frac = text.partition(".")
    words = integer(whole) if whole else ""
    if frac:
        words = f"{words} point {digits(frac)}".strip()
    return words


def year(n: int) -> str:
    """Read a year: 2026 -> "twenty twenty-six", 1905 -> "nineteen oh five", 2005 -> "two
    thousand five", 1900 -> "nineteen hundred". Outside 1000-2999 it is a cardinal."""
    if not 1000 <= n <= 2999 or n % 1000 == 0 or 2000 < n < 2010:
        return cardinal(n)
    high, low = divmod(n, 100)
    if low == 0:
        return f"{cardinal(high)} hundred"
    if low < 10:
        return f"{cardinal(high)} oh {_ONES[low]}"
    return f"{cardinal(high)} {cardinal(low)}"


def money(symbol: str, number: str, scale: str | None) -> str:
    """"$4.99" -> "four dollars and ninety-nine cents"; scale "M": "... million dollars"."""
    unit, units, cent, cents = lexicon.CURRENCIES[symbol]
    whole, _, frac = number.partition(".")
    if scale:
        return f"{decimal(number)} {lexicon.CURRENCY_SCALES[scale]} {units}"
    if len(frac) != 2:
        singular = number in ("1", "1.0") and not frac
        return f"{decimal(number)} {unit if singular else units}"
    main = int(whole.replace(",", "") or 0)
    hundredths = int(frac)
    parts = []
    if main or not hundredths:
        parts.append(f"{integer(whole or '0')} {unit if main == 1 else units}")
    if hundredths:
        parts.append(f"{cardinal(hundredths)} {cent if hundredths == 1 else cents}")
    return " and ".join(parts)
