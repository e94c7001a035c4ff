"""Symbols in normalization: the unspeakable out first, the rest read as words last.

``drop_unspeakable`` runs before anything else: characters that are neither letters, digits,
whitespace, sentence punctuation nor a symbol some later step reads are dropped (emoji, ©,
™, *, ~, ^, |, <, >, control characters, numerals such as "½"), with one debug log line per
call naming them. ``clean_symbols`` runs last, after numbers, units and abbreviations have
become words, so every symbol left stands alone: "&" -> "and", "%" -> "percent"; dashes and
brackets become commas; quotes vanish; spaces and punctuation runs are tidied.
"""

from __future__ import annotations

import logging
import re
from typing import Final

_LOGGER = logging.getLogger(__name__)

_COMMA: Final = " , "
_SYMBOLS: Final = str.maketrans({
    "&": " and ", "@": " at ", "+": " plus ", "=": " equals ", "%": " percent ",
    "°": " degrees ", "/": " ", "\\": " ", "…": "...",
    **dict.fromkeys("()[]—–", _COMMA),
    **dict.fromkeys("\"“”„«»`´", " "),
})
_DASH: Final = re.compile(r"-(?:-+|(?<!\S-)(?!\S))")  # "--" or a "-" between spaces
_UNSPEAKABLE: Final = re.compile(
    r"[^\w\s.,?!:;'\-+$£€¥°%#/&@=…()\[\]—–\"“”„«»`´]|_|\#(?! ?[0-9])"  # "#4" is "number four"
)
_STRAY: Final = re.compile(r"[^\w\s.,?!:;'\-]|_")
_LOOSE_MARK: Final = re.compile(r"'(?:(?<![^\W\d_]')|(?![^\W\d_]))|-(?:(?<!\w-)|(?!\w))")
_ODD_SPACE: Final = re.compile(r"[^\S \n]")
_SPACES: Final = re.compile(r"  +")
_SPACE_BEFORE_PUNCT: Final = re.compile(r" +(?=[.,?!:;])")
_PUNCT_RUN: Final = re.compile(r"[.,?!:;](?:[ ]*[.,?!:;])+")
_LOWER_FOLLOWS: Final = re.compile(r" *[a-z]")
_NO_SPACE_AFTER: Final = re.compile(r"([,;:?!])(?=[^\W\d_])")


def clean_symbols(text: str) -> str:
    """Read leftover symbols as words, drop what cannot be spoken, tidy spaces and punctuation."""
    text = _DASH.sub(_COMMA, text.translate(_SYMBOLS))
    stray = set(_STRAY.findall(text))  # "$" or "#" with no number after it
    if stray:
        _LOGGER.debug("Dropped stray symbols: %s", ", ".join(map(ascii, sorted(stray))))
        text = _STRAY.sub(" ", text)
    text = _LOOSE_MARK.sub(" ", text)
    text = _SPACES.sub(" ", _ODD_SPACE.sub(" ", text))
    text = _SPACE_BEFORE_PUNCT.sub("", text)
    text = _PUNCT_RUN.sub(_strongest, text)
    text = _NO_SPACE_AFTER.sub(r"\1 ", text)
    lines = (line.lstrip(" .,?!:;").rstrip(" ,:;") for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def drop_unspeakable(text: str) -> str:
    """Remove characters that no later step reads, logging them at debug level."""
    dropped = set(_UNSPEAKABLE.findall(text))
    if not text.isascii():
        # \w also matches numerals that are not ASCII digits ("½", "Ⅻ"); nothing reads them
        numerals = {ch for ch in text if not ch.isascii() and ch.isalnum() and not ch.isalpha()}
        if numerals:
            dropped |= numerals
            text = "".join(" " if ch in numerals else ch for ch in text)
    if dropped:
        _LOGGER.debug("Dropped unspeakable characters: %s", ", ".join(map(ascii, sorted(dropped))))
        text = _UNSPEAKABLE.sub(" ", text)
    return text


def _strongest(m: re.Match[str]) -> str:
    """One mark for a run like "?!", "..." or ", .": the strongest break wins."""
    run = m.group()
    if run.strip(".") == "" and _LOWER_FOLLOWS.match(m.string, m.end()):
        return ","  # "Wait... what": a pause, not a sentence end
    for mark in "?!.;:":
        if mark in run:
            return mark
    return "," if "," in run else "."
