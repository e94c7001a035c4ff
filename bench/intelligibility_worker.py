"""Synthesis half of bench/intelligibility.py: one system's audio for one set of lines.

    python -m bench.intelligibility_worker SPEC.json

SPEC: {"system": "edged"|"espeak"|"piper", "voices": DIR, "cache": DIR, "languages": {code:
voice}, "lines": [{"text", "lang", "wav"}], "piper_model": PATH}. "edged" and "espeak" go through
edged as `edged say` speaks (segment, route along the chains, join: synthesis/plan.py), with
`languages` naming the voice per language; "piper" is piper-tts (the bench extra) with the same
default voice, English only. One JSON line per line on stdout (synthesis
time, audio seconds, the voices that spoke).
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


def edged_system(spec: dict[str, Any]) -> None:
    from edged.config import parse_config
    from edged.synthesis.plan import Planner, spoken
    from edged.voice import LoadedVoices

    cache = Path(spec["cache"])
    config = parse_config({"voice": {"dirs": [spec["voices"]], "prepare": spec.get("prepare", True)},
                           "cache": {"dir": str(cache)},
                           "limits": {"memory_mb": spec.get("memory_mb", 3000)},
                           "languages": spec["languages"]}, cache)
    planner = Planner(config, LoadedVoices(config))
    for line in spec["lines"]:
        lang = line["lang"]
        start = time.monotonic()
        utterance = planner.utterance(line["text"], language=None if "+" in lang else lang)
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
