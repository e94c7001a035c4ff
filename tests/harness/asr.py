"""Speech recognition round trip (pocketsphinx, its bundled en-US model) and word error rate.

Shared by tests/test_intelligibility.py and bench/synth.py.
"""

from __future__ import annotations

import re

import numpy as np

from .paths import DATA

CORPUS = DATA / "corpus"
_ASR_RATE = 16000


def corpus_lines() -> tuple[list[str], list[str]]:
    """(texts, spoken references), line for line."""
    texts = (CORPUS / "announcements_en.txt").read_text().splitlines()
    spoken = (CORPUS / "announcements_en_spoken.txt").read_text().splitlines()
    return [t for t in texts if t.strip()], [s for s in spoken if s.strip()]


class Recognizer:
    def __init__(self) -> None:
        from pocketsphinx import Decoder

        self._decoder = Decoder(samprate=_ASR_RATE, logfn="/dev/null")

    def transcribe(self, samples: np.ndarray, rate_hz: int) -> str:
        import soxr

        x = soxr.resample(samples.astype(np.float32) / 32768, rate_hz, _ASR_RATE)
        pcm = (np.clip(x, -1, 1) * 32767).astype(np.int16).tobytes()
        self._decoder.start_utt()
        self._decoder.process_raw(pcm, full_utt=True)
        self._decoder.end_utt()
        hyp = self._decoder.hyp()
        return hyp.hypstr if hyp else ""


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edit distance in words, reference length)."""
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[len(hyp)], len(ref)


def wer(references: list[str], hypotheses: list[str]) -> float:
    errors = total = 0
    for ref, hyp in zip(references, hypotheses, strict=True):
        e, n = word_errors(ref, hyp)
        errors, total = errors + e, total + n
    return errors / max(total, 1)
