"""Text arriving in pieces (a conversation agent's answer, token by token) cut into sentences as soon
as each one is known to be complete, so that it can be spoken while the rest arrives.

A sentence ends at . ! ? or … (with any closing quotes or brackets) followed by whitespace and then
the start of the next one: the character after the space must already be there, so "3." then "5"
is never cut, and neither is a title or abbreviation that does not end sentences ("Dr.", "e.g."),
an initial ("J. Smith") or a stop followed by a lower-case word ("5 p.m. today"). Chinese and
Japanese end a sentence at 。！？ with no space after (the next character there is enough). A
line break ends a sentence too. Whatever is left is spoken at the end (`finish`).

The first part may be a clause (`first_clause_words`): while nothing has been given out and the
sentence is still arriving (the text does not end in a stop), a clause of at least that many
words that ends in , ; : or a dash (followed, as a stop is, by whitespace and the next word) goes
out at once, so that the first audio does not wait for the rest of a long first sentence to
arrive. Only the first part: after it, whole sentences, whose prosody a voice gets right.
`first_was_clause` tells the speaker not to pause after it, as no voice pauses for a sentence
end inside a sentence. Nothing here knows the voice.
"""

from __future__ import annotations

import re
from typing import Final

from ..frontend.lexicon import ABBREVIATIONS, TITLES

_CJK_CLOSERS: Final = "」』）\"')\\]}»”’"
_END: Final = re.compile(r"[.!?…]+[\"')\]}»”’]*(?=\s+\S)"
                         rf"|[。！？]+[{_CJK_CLOSERS}]*(?=\s*[^\s{_CJK_CLOSERS}])|\n")
_CLAUSE: Final = re.compile(r"[,;:—–][\"')\]}»”’]*(?=\s+\S)")
_STOP_AT_END: Final = re.compile(r"[.!?…][\"')\]}»”’]*\s*$")
_NO_END: Final = frozenset({t.lower() for t in TITLES} |
                           {a for a, (_spoken, may_end) in ABBREVIATIONS.items() if not may_end})


class SentenceBuffer:
    """Not thread-safe: one per streamed response."""

    def __init__(self, first_clause_words: int = 0) -> None:
        """`first_clause_words`: the fewest words a first part cut at a clause has (0: none)."""
        self._text = ""
        self._first_clause_words = first_clause_words
        self._given = False
        self.first_was_clause = False
        """The first part given out ended at a clause, inside its sentence."""

    def add(self, text: str) -> list[str]:
        """The parts `text` completes, in order (may be none): sentences, or a first clause."""
        self._text += text
        sentences = self._sentences()
        if not sentences and not self._given and self._first_clause_words:
            clause = self._first_clause()
            if clause:
                sentences, self.first_was_clause = [clause], True
        self._given = self._given or bool(sentences)
        return sentences

    def _first_clause(self) -> str:
        """The shortest run of clauses with enough words, taken off the text ('' if none). None
        when the text ends in a stop: the sentence looks complete (a whole answer sent at once),
        and a voice speaks a whole sentence better than its clauses one by one."""
        if _STOP_AT_END.search(self._text):
            return ""
        for match in _CLAUSE.finditer(self._text):
            clause = self._text[:match.end()].strip()
            if len(clause.split()) >= self._first_clause_words:
                self._text = self._text[match.end():]
                return clause
        return ""

    def _sentences(self) -> list[str]:
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
