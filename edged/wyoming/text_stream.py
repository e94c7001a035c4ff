"""Text arriving in pieces (a conversation agent's answer, token by token) cut into sentences as soon
as each one is known to be complete, so that it can be spoken while the rest arrives.

A sentence ends at . ! ? or … (with any closing quotes or brackets) followed by whitespace and then
the start of the next one: the character after the space must already be there, so "3." then "5"
is never cut, and neither is a title or abbreviation that does not end sentences ("Dr.", "e.g."),
an initial ("J. Smith") or a stop followed by a lower-case word ("5 p.m. today"). A line break
ends a sentence too. Whatever is left is spoken at the end (`finish`).
"""

from __future__ import annotations

import re
from typing import Final

from ..frontend.lexicon import ABBREVIATIONS, TITLES

_END: Final = re.compile(r"[.!?…]+[\"')\]}»”’]*(?=\s+\S)|\n")
_NO_END: Final = frozenset({t.lower() for t in TITLES} |
                           {a for a, (_spoken, may_end) in ABBREVIATIONS.items() if not may_end})


class SentenceBuffer:
    """Not thread-safe: one per streamed response."""

    def __init__(self) -> None:
        self._text = ""

    def add(self, text: str) -> list[str]:
        """The sentences `text` completes, in order (may be none)."""
        self._text += text
        sentences = []
        start = 0
        for match in _END.finditer(self._text):
            end = match.end()
            if match.group() != "\n" and not self._ends_here(match.start(), end):
                continue
            sentence = self._text[start:end].strip()
            if sentence:
                sentences.append(sentence)
            start = end
        self._text = self._text[start:]
        return sentences

    def finish(self) -> str:
        """What is left: the last sentence (maybe without its stop), or ''."""
        rest, self._text = self._text.strip(), ""
        return rest

    def _ends_here(self, stop: int, end: int) -> bool:
        after = self._text[end:].lstrip()
        if after[:1].islower():
            return False
        if self._text[stop] != ".":
            return True
        word = self._text[:stop].rsplit(None, 1)[-1] if self._text[:stop].strip() else ""
        initial = len(word) == 1 and word.isupper()
        return not (initial or word.lower() in _NO_END)

    def __len__(self) -> int:
        """Characters waiting for the end of their sentence."""
        return len(self._text)
