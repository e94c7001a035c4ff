"""Text arriving in pieces cut into sentences as soon as each is complete (Wyoming streaming)."""

from __future__ import annotations

import pytest

from edged.wyoming.text_stream import SentenceBuffer


def _feed(pieces: list[str]) -> list[list[str]]:
    buffer = SentenceBuffer()
    out = [buffer.add(p) for p in pieces]
    out.append([buffer.finish()])
    return out


def test_a_sentence_is_given_out_once_the_next_one_has_begun() -> None:
    """"ready." alone might still be "ready.5": the sentence goes once the next one starts."""
    assert _feed(["Dinner is ready.", " The", " oven is hot!", " "]) == [
        [], ["Dinner is ready."], [], [], ["The oven is hot!"]]


@pytest.mark.parametrize(("text", "sentences"), [
    ("It costs 3.5 euros. Pay now.", ["It costs 3.5 euros.", "Pay now."]),
    ("Ask Dr. Smith. He knows.", ["Ask Dr. Smith.", "He knows."]),
    ("Bring fruit, e.g. apples. Thanks.", ["Bring fruit, e.g. apples.", "Thanks."]),
    ("J. R. Tolkien wrote it. Read it.", ["J. R. Tolkien wrote it.", "Read it."]),
    ("At 5 p.m. today we eat. Yes.", ["At 5 p.m. today we eat.", "Yes."]),
    ('She said "Go!" Then left.', ['She said "Go!"', "Then left."]),
    ("Wait... What? Really!", ["Wait...", "What?", "Really!"]),
    ("First line\nSecond line", ["First line", "Second line"]),
])
def test_sentences_end_where_a_reader_would_stop(text: str, sentences: list[str]) -> None:
    """Decimals, titles, abbreviations, initials and lower-case continuations do not end a
    sentence; stops, closing quotes and line breaks do."""
    for cut in range(len(text) + 1):  # wherever the pieces are cut, the same sentences
        out = _feed([text[:cut], text[cut:]])
        assert [s for group in out for s in group if s] == sentences, cut
