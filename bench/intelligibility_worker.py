"""Synthesis half of bench/intelligibility.py: one system's audio for one set of lines.

    python -m bench.intelligibility_worker SPEC.json

SPEC: {"system": "edged"|"espeak"|"piper", "voices": DIR, "cache": DIR, "languages": {code:
voice}, "lines": [{"text", "lang", "wav"}], "piper_model": PATH, "perturb": [EPS, SEED] or
null, "head_window": true|false|null (voice.kokoro_head_window; null: the default)}. "edged"
and "espeak" go through edged as `edged say` speaks (segment, route along the chains, join:
synthesis/plan.py), with `languages` naming the voice per language; "piper" is piper-tts (the
bench extra) with the same default voice, English only. One JSON line per line on stdout (synthesis
time, audio seconds, the voices that spoke).

"perturb" (the judge's own noise, `bench.intelligibility --perturb`): every Kokoro decoder input
multiplied by (1 + EPS x Gaussian noise), seeded. At 1e-6 no listener can hear it, but Kokoro's
8-bit decoder turns it into a different noise floor, so what the judge then writes differently
is the judge's noise for a Kokoro voice, the bar any Kokoro change must clear.
"""

from __future__ import annotations

import json
import sys
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

from .common import emit


def write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


def perturb_kokoro(eps: float, seed: int) -> None:
    """Kokoro's decoder fed its input times (1 + eps x noise): see the module's text."""
    import itertools

    from edged.voice.kokoro import packing

    calls = itertools.count()
    unpack = packing.PackedDecoder._inputs

    def perturbed(self: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        packed = feeds[packing.PACKED]
        noise = np.random.default_rng((seed, next(calls))).standard_normal(packed.shape)
        return unpack(self, {**feeds, packing.PACKED: (packed * (1 + eps * noise)).astype(
            packed.dtype)})

    packing.PackedDecoder._inputs = perturbed  # type: ignore[method-assign]


def edged_system(spec: dict[str, Any]) -> None:
    from edged.config import parse_config
    from edged.synthesis.plan import Planner, spoken
    from edged.voice import LoadedVoices

    if spec.get("perturb"):
        perturb_kokoro(float(spec["perturb"][0]), int(spec["perturb"][1]))
    cache = Path(spec["cache"])
    config = parse_config({"voice": {"dirs": [spec["voices"]], "prepare": spec.get("prepare", True),
                                     **({"kokoro_head_window": spec["head_window"]}
                                        if spec.get("head_window") is not None else {})},
                           "cache": {"dir": str(cache)},
                           "limits": {"memory_mb": spec.get("memory_mb", 3000)},
                           "languages": spec["languages"]}, cache)
    planner = Planner(config, LoadedVoices(config))
    for line in spec["lines"]:
        lang = line["lang"]
        start = time.monotonic()
        utterance = planner.utterance(line["text"], language=None if "+" in lang else lang,
                                      speed=spec.get("speed"))  # a request's, for every part
        chunks = [c.samples for c in spoken(utterance, lambda part, lanes: part.voice.stream(
            part.text, part.settings, lanes))]
        samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
        write_wav(Path(line["wav"]), samples, utterance.rate_hz)
        emit("line", synth_s=time.monotonic() - start, audio_s=len(samples) / utterance.rate_hz,
             voices=[part.voice.name for part in utterance.parts])


def piper_system(spec: dict[str, Any]) -> None:
    from piper import PiperVoice

    voice = PiperVoice.load(spec["piper_model"])
    for line in spec["lines"]:
        start = time.monotonic()
        chunks = [c.audio_int16_array for c in voice.synthesize(line["text"])]
        samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
        rate = voice.config.sample_rate
        write_wav(Path(line["wav"]), samples, rate)
        emit("line", synth_s=time.monotonic() - start, audio_s=len(samples) / rate,
             voices=["piper-tts"])


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    (piper_system if spec["system"] == "piper" else edged_system)(spec)
