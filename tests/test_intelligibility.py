"""A listener understands the default voice: ASR round trip over the benchmark corpus.

The threshold comes from measurement (see docs/benchmarks.md): edged's pipeline with
noise scales 0 measured WER 0.173 with pocketsphinx (2026-11-30), 0.165 prepared and 0.144 with INT8
weights (decoder float); piper-tts on the same voice is compared
in bench/synth.py (a bench extra), not here, to keep `make test` light.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edged.config import parse_config
from edged.voice import load_voice
from tests.harness.asr import Recognizer, corpus_lines, wer, word_errors
from tests.harness.voices import PreparedVoices

_MAX_WER = 0.25


@pytest.mark.voice
@pytest.mark.parametrize("precision", [  # the default precision in `make test`
    pytest.param("float32", marks=pytest.mark.long), "int8"])
def test_corpus_is_understood_by_a_recognizer(tmp_path: Path, default_voice_path: Path,
                                               prepared_voices: PreparedVoices,
                                               precision: str) -> None:
    """Speech the recognizer can follow: corpus WER below a measured threshold, for the voice
    as the daemon loads it (prepared: encoder + windowed decoder), float32 and INT8 weights."""
    prepared_voices.seed(tmp_path / "cache", precision)
    config = parse_config({"voice": {"name": str(default_voice_path), "precision": precision},
                           "cache": {"dir": "cache"}}, tmp_path)
    voice = load_voice(config)
    assert voice.precision == precision  # prepared as asked, not silently loaded as it is
    settings = voice.settings(noise_scale=0.0, noise_w=0.0)
    recognizer = Recognizer()
    texts, spoken = corpus_lines()
    hypotheses = []
    for text in texts:
        audio = voice.synthesize(text, settings)
        hypotheses.append(recognizer.transcribe(audio.samples, audio.rate_hz))
    score = wer(spoken, hypotheses)
    worst = max(zip(spoken, hypotheses, strict=True), key=lambda p: word_errors(*p)[0])
    assert score < _MAX_WER, f"WER {score:.3f}; worst line: {worst}"


def test_wer_counts_edits() -> None:
    """The scorer itself: substitutions, insertions and deletions each count one."""
    assert word_errors("the door is open", "the door is open") == (0, 4)
    assert word_errors("the door is open", "the floor is open now") == (2, 4)
    assert word_errors("the door is open", "door open") == (2, 4)
