"""Synthesis half of bench/intelligibility.py: one system's audio for one set of lines.

    python bench/intelligibility_worker.py SPEC.json

SPEC: {"system": "edged"|"espeak"|"piper", "voices": DIR, "cache": DIR, "languages": {code:
voice}, "lines": [{"text", "lang", "wav"}], "piper_model": PATH}. "edged" and "espeak" go through
edged as the daemon speaks (segment, route along the chains, join: languages/route.py and
synthesis/join.py), with `languages` naming the voice per language; "piper" is piper-tts (the
bench extra) with the same default voice, English only. One JSON line per line on stdout (synthesis
time, audio seconds, the voices that spoke).
"""

from __future__ import annotations

import json
import sys
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import emit  # noqa: E402


def write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


def edged_system(spec: dict[str, Any]) -> None:
    from edged.config import parse_config
    from edged.languages.route import Router
    from edged.synthesis.join import Joiner
    from edged.voice import VoicePool, default_settings

    cache = Path(spec["cache"])
    config = parse_config({"voice": {"dirs": [spec["voices"]]}, "cache": {"dir": str(cache)},
                           "limits": {"memory_mb": 3000}, "languages": spec["languages"]}, cache)
    router = Router(config, VoicePool(config))
    for line in spec["lines"]:
        lang = line["lang"]
        start = time.monotonic()
        routed = router.route(line["text"], language=None if "+" in lang else lang)
        streams: list[Iterator[Any]] = [
            r.voice.stream(r.text, default_settings(config, r.voice)) for r in routed]
        if len(routed) == 1:
            rate = routed[0].voice.rate_hz
            chunks = [c.samples for c in streams[0]]
        else:
            joiner = Joiner(max(r.voice.rate_hz for r in routed), config.languages.switch_pause_ms)
            rate = joiner.rate_hz
            chunks = [c.samples for s in streams for c in joiner.part(s)]
        samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
        write_wav(Path(line["wav"]), samples, rate)
        emit("line", synth_s=time.monotonic() - start, audio_s=len(samples) / rate,
             voices=[r.voice.name for r in routed])


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
