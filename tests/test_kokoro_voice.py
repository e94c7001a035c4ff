"""The Kokoro backend (Japanese and Mandarin): reference sentences, golden phonemes and tokens,
bounded steps, one shared model. Long: needs edged[ja,zh] and the pulled Mandarin style, which
`make test-long` installs (EDGED_TEST_VOICES names the folder it pulled into)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.harness.paths import EDGED

pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def voices_dir() -> Path:
    folder = os.environ.get("EDGED_TEST_VOICES", "")
    style = Path(folder) / "kokoro" / "zf_xiaoxiao.bin"
    assert folder and style.is_file(), \
        "run through `make test-long`: it installs edged[ja,zh] and pulls zf_xiaoxiao"
    return Path(folder).resolve()  # a config in a temp folder reads it


@pytest.fixture(scope="module")
def kokoro(tmp_path_factory: pytest.TempPathFactory, voices_dir: Path) -> dict:
    """The Japanese and the Mandarin voice, loaded as the daemon loads them."""
    from edged.voice.kokoro.voice import load_kokoro

    cache = tmp_path_factory.mktemp("kokoro-cache")
    options = {"cache_dir": cache, "dirs": [voices_dir], "threads": 2, "sentence_pause_ms": 200,
               "date_order": "mdy"}
    return {"ja": load_kokoro("jf_alpha", **options), "zh": load_kokoro("zf_xiaoxiao", **options)}


_REFERENCE = [
    ("ja", "明日は7:30に会議があります。よろしくお願いします。", 2.5, 9.0),
    ("zh", "明天 7:30 开会，我们在四楼见。", 2.0, 8.0),
]


@pytest.mark.parametrize(("language", "text", "low", "high"), _REFERENCE,
                         ids=[r[0] for r in _REFERENCE])
def test_reference_sentences_speak(kokoro: dict, language: str, text: str, low: float,
                                   high: float) -> None:
    """Each language's reference sentence: 24 kHz, a plausible duration, speech throughout."""
    audio = kokoro[language].synthesize(text)
    assert audio.rate_hz == 24000
    assert low < audio.duration_s < high, audio.duration_s
    quarters = np.array_split(audio.samples.astype(np.float64), 4)
    assert all(np.sqrt(np.mean(q**2)) > 300 for q in quarters), \
        [np.sqrt(np.mean(q**2)) for q in quarters]


# Reviewed against the dictionaries: 明日は会議があります ashita wa kaigi ga arimasu; 今日は晴れ
# です kyō wa hare desu (misaki writes the particle は as βa); 明天开会 míng tiān kāi huì
# (↗ tone 2, → tone 1, ↘ tone 4); 我们在四楼见 wǒ men zài sì lóu jiàn (↓ tone 3, no mark for the
# neutral men); 3:05 read 三点零五分 sān diǎn líng wǔ fēn. Third-tone sandhi is not applied.
_GOLDEN = [
    ("ja", "明日は会議があります。", "aɕita βa kaiɡʲi ɡa aɾʲimasɨ.",
     [43, 77, 51, 62, 43, 16, 75, 43, 16, 53, 43, 51, 92, 164, 51, 16, 92, 43, 16, 43, 125, 164,
      51, 55, 43, 61, 101, 4]),
    ("ja", "今日は晴れです。", "kʲoː βa haɾe desɨ.",
     [53, 164, 57, 158, 16, 75, 43, 16, 50, 43, 125, 47, 16, 46, 47, 61, 101, 4]),
    ("zh", "明天开会。", "mi↗ŋtʰjɛ→n kʰai→xwei↘.",
     [55, 51, 172, 112, 62, 162, 52, 86, 171, 56, 16, 53, 162, 43, 51, 171, 66, 65, 47, 51, 173,
      4]),
    ("zh", "我们在四楼见。", "wo↓mən ʦai↘ sɨ↘lou↗ ʨjɛ↘n.",
     [65, 57, 169, 55, 83, 56, 16, 20, 43, 51, 173, 16, 61, 101, 173, 54, 57, 63, 172, 16, 21, 52,
      86, 173, 56, 4]),
    ("zh", "下午3:05", "ɕja↘u↓ sa→ntjɛ↓n li↗ŋu↓fə→n",
     [77, 52, 43, 173, 63, 169, 16, 61, 43, 171, 56, 62, 52, 86, 169, 56, 16, 54, 51, 172, 112,
      63, 169, 48, 83, 171, 56]),
]


@pytest.mark.parametrize(("language", "text", "phonemes", "tokens"), _GOLDEN,
                         ids=[g[1] for g in _GOLDEN])
def test_golden_phonemes_and_tokens(kokoro: dict, language: str, text: str, phonemes: str,
                                    tokens: list[int]) -> None:
    """The frontends' phonemes and the model's token ids for the reference words."""
    voice = kokoro[language]
    assert voice.phonemes(text) == [phonemes]
    assert _joined(voice, voice.tokens(text)) == tokens


def _joined(voice: Any, pieces: list[list[int]]) -> list[int]:
    """The pieces' token ids as one inference: the short first piece is cut at a space."""
    space = voice._model.vocab[" "]
    return [token for i, piece in enumerate(pieces) for token in [space] * (i > 0) + piece]


def _silent_s(samples: np.ndarray, reverse: bool) -> float:
    loud = np.flatnonzero(np.abs(samples[::-1] if reverse else samples) > 300)
    return (loud[0] if len(loud) else len(samples)) / 24000


def test_mandarin_keeps_whole_clauses_as_its_first_piece(kokoro: dict) -> None:
    """Mandarin is never cut between words (tones suffer: kokoro/voice.py FIRST_BY_LANGUAGE).
    Its first piece is its whole clauses within 40 tokens: a median line (52 tokens) starts with
    its first clause alone (before stop 44: one piece, first audio waiting for all of it); a
    first clause over 40 tokens is the first piece alone, as before, not the whole sentence cut
    at 100; a short line is one piece."""
    voice = kokoro["zh"]
    symbols = {token: symbol for symbol, token in voice._model.vocab.items()}

    def said(piece: list[int]) -> str:
        return "".join(symbols[t] for t in piece)
    pieces = voice.tokens("前门已经打开了，请注意安全。")
    assert len(pieces) == 2 and len(pieces[0]) <= 40, [said(p) for p in pieces]
    assert said(pieces[0]).endswith(","), said(pieces[0])
    text = "四楼的客人请马上离开房间，到楼下的停车场集合。"  # its first clause: 53 tokens
    pieces = voice.tokens(text)
    assert 40 < len(pieces[0]) <= 60 and said(pieces[0]).endswith(","), [said(p) for p in pieces]
    assert len(voice.tokens("明天开会。")) == 1


def test_japanese_first_piece_ends_after_a_particle(kokoro: dict) -> None:
    """Japanese is cut short only after a particle: 三人 (saɴ ɲiɴ) stays whole; the audio runs
    on across the cut (no sentence pause: the silence there is Kokoro's own edges, under
    0.1 s)."""
    voice = kokoro["ja"]
    text = "お客様が三人いらっしゃいました。"
    pieces = voice.tokens(text)
    symbols = {token: symbol for symbol, token in voice._model.vocab.items()}
    assert len(pieces) == 2
    assert "".join(symbols[t] for t in pieces[0]).endswith(" ɡa"), pieces
    chunks = [chunk.samples for chunk in voice.stream(text)]
    assert len(chunks) == 2
    gap = _silent_s(chunks[0], reverse=True) + _silent_s(chunks[1], reverse=False)
    assert gap < 0.1, gap


def test_steps_are_bounded_and_the_model_shared(kokoro: dict) -> None:
    """A long text is cut into inferences of at most 100 tokens, one chunk each; both voices
    run on one model (a second Kokoro voice costs its style, not another model)."""
    text = "明天上午九点在三楼会议室开会，请大家准时参加，并带上上周的报告和这周的计划。" * 3
    voice = kokoro["zh"]
    pieces = voice.tokens(text)
    assert len(pieces) >= 3 and max(len(p) for p in pieces) <= 100
    assert len(list(voice.stream(text))) == len(pieces)
    assert kokoro["ja"]._model is kokoro["zh"]._model


def test_say_speaks_mandarin_with_kokoro(tmp_path: Path, voices_dir: Path) -> None:
    """The acceptance line with edged[zh]: Mandarin by kokoro:zm_yunjian, English by the
    default voice, one 24 kHz WAV; over the budget, the same line falls back to espeak-ng."""
    config = tmp_path / "edged.yaml"
    out = tmp_path / "mixed.wav"
    for memory_mb, voice in ((900, "kokoro:zm_yunjian"), (250, "espeak:cmn")):
        config.write_text(yaml.safe_dump({"voice": {"dirs": [str(voices_dir)]},
                                          "limits": {"memory_mb": memory_mb},
                                          "cache": {"dir": str(tmp_path / "cache")}}))
        r = subprocess.run([*EDGED, "--debug", "say", "明天 7:30 开会，meeting in room 4B",
                            "-c", str(config), "-o", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert f"Part zh ({voice}): 明天 7:30 开会，" in r.stderr, r.stderr
        assert "Part en (en_US-joe-medium): meeting in room 4B" in r.stderr
