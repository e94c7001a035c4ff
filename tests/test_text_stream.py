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


def test_a_chinese_or_japanese_sentence_goes_out_when_the_next_character_comes() -> None:
    assert _feed(["洗濯が終わりました。", "次", "は乾燥です。"]) == [
        [], ["洗濯が終わりました。"], [], ["次は乾燥です。"]]


@pytest.mark.parametrize(("text", "sentences"), [
    ("It costs 3.5 euros. Pay now.", ["It costs 3.5 euros.", "Pay now."]),
    ("Ask Dr. Smith. He knows.", ["Ask Dr. Smith.", "He knows."]),
    ("Bring fruit, e.g. apples. Thanks.", ["Bring fruit, e.g. apples.", "Thanks."]),
    ("J. R. Tolkien wrote it. Read it.", ["J. R. Tolkien wrote it.", "Read it."]),
    ("At 5 p.m. today we eat. Yes.", ["At 5 p.m. today we eat.", "Yes."]),
    ('She said "Go!" Then left.', ['She said "Go!"', "Then left."]),
    ("Wait... What? Really!", ["Wait...", "What?", "Really!"]),
    ("First line\nSecond line", ["First line", "Second line"]),
    # Chinese and Japanese: no space after a stop (a whole answer was one "sentence" before)
    ("厨房的灯亮了。客厅很暗！要关吗？好。", ["厨房的灯亮了。", "客厅很暗！", "要关吗？", "好。"]),
    ("「洗濯が終わりました。」次は乾燥です。", ["「洗濯が終わりました。」", "次は乾燥です。"]),
    ("气温是3.5度。 明天更冷。", ["气温是3.5度。", "明天更冷。"]),
])
def test_sentences_end_where_a_reader_would_stop(text: str, sentences: list[str]) -> None:
    """Decimals, titles, abbreviations, initials and lower-case continuations do not end a
    sentence; stops, closing quotes and line breaks do."""
    for cut in range(len(text) + 1):  # wherever the pieces are cut, the same sentences
        out = _feed([text[:cut], text[cut:]])
        assert [s for group in out for s in group if s] == sentences, cut


def test_a_first_clause_goes_out_before_its_sentence_is_complete() -> None:
    """With first_clause_words, the first part may end at a clause of enough words, once the
    next word has begun; then whole sentences again, and no more clauses."""
    buffer = SentenceBuffer(first_clause_words=3)
    assert buffer.add("In about five minutes,") == []  # the next word has not begun
    assert buffer.add(" the oven, which is") == ["In about five minutes,"]
    assert buffer.first_was_clause
    assert buffer.add(" hot, will beep. Then, after that") == ["the oven, which is hot, will beep."]
    assert buffer.add(", nothing") == []
    assert buffer.finish() == "Then, after that, nothing"


@pytest.mark.parametrize(("pieces", "parts"), [
    (["Sure, the light is on. Ok"], ["Sure, the light is on."]),  # a sentence comes first
    (["Sure, the light is on"], []),  # "Sure," is too short
    (["When the machine is done, the dryer starts."], []),  # whole: the voice cuts it itself
    (["It seats 3,000 people and", " more"], []),  # no space after the comma
    (["Meet at 3:30 or later and"], []),
    (["Tonight — after dinner —", " we go"], ["Tonight — after dinner —"]),
    (["First of all; then, as", " said"], ["First of all;"]),
])
def test_where_a_first_clause_may_end(pieces: list[str], parts: list[str]) -> None:
    buffer = SentenceBuffer(first_clause_words=3)
    assert [p for piece in pieces for p in buffer.add(piece)] == parts
    assert buffer.first_was_clause == (bool(parts) and parts[0][-1] in ",;:—–")


def test_no_clause_is_cut_without_first_clause_words() -> None:
    assert _feed(["When the washing machine is done, the dryer", " starts."]) == [
        [], [], ["When the washing machine is done, the dryer starts."]]
