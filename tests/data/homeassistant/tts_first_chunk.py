#!/usr/bin/env python3
"""Time to the first audio through Home Assistant's streaming TTS, for several TTS entities.

Run with HA's Python while the harness runs; prints JSON on stdout:

  tts_first_chunk.py --lines FILE --entity tts.a --entity tts.b [--voice NAME] [--rounds 2]

For each line of FILE (each time with its own number in front, so that no cache can answer), the entities
take turns (the order flips from line to line): `POST /api/tts_get_url` with preferred_format wav
(HA converts nothing: no ffmpeg in the timing) then `GET` of the audio HA streams. first_s: from
the POST to the first audio byte HA serves past the WAV header; total_s: to the last byte;
audio_s: the seconds of audio served. One request per entity first, not counted (a server may
load its voice on first use).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hassclient import HA  # noqa: E402

_WAV_HEADER = 44
_RATE_BYTES = 22050 * 2  # refined from the header's byte rate


def measure(ha: HA, entity: str, text: str, voice: str | None, timeout: float) -> dict:
    options: dict = {"preferred_format": "wav"}
    if voice:
        options["voice"] = voice
    start = time.monotonic()
    url = ha.post("/api/tts_get_url", {"engine_id": entity, "message": text, "language": "en_US",
                                       "options": options, "cache": False}, timeout=timeout)["path"]
    first = None
    body = bytearray()
    with urllib.request.urlopen(ha.base + url, timeout=timeout) as response:
        while chunk := response.read1(65536):
            body += chunk
            if first is None and len(body) > _WAV_HEADER:
                first = time.monotonic() - start
    total = time.monotonic() - start
    byte_rate = int.from_bytes(body[28:32], "little") or _RATE_BYTES
    return {"first_s": first, "total_s": total,
            "audio_s": (len(body) - _WAV_HEADER) / byte_rate}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=Path, required=True)
    ap.add_argument("--entity", action="append", required=True)
    ap.add_argument("--voice")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    ha = HA.from_state()
    lines = [line.strip() for line in args.lines.read_text().splitlines() if line.strip()]
    for entity in args.entity:
        measure(ha, entity, "Warming up.", args.voice, args.timeout)
    got: dict[str, list[dict]] = {entity: [] for entity in args.entity}
    for rnd in range(args.rounds):
        for n, line in enumerate(lines):
            # The number leads: edged caches each sentence of a streamed text, so a suffix of
            # its own would leave the first sentence one that round 1 already spoke.
            text = f"Note {rnd * len(lines) + n + 1}: {line}"
            order = args.entity if n % 2 == 0 else list(reversed(args.entity))
            for entity in order:
                got[entity].append(measure(ha, entity, text, args.voice, args.timeout))
    json.dump(got, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
