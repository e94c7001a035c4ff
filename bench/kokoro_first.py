"""Kokoro's first piece: what one inference costs per piece length, and first audio before and
after the short first piece, in one run.

    .venv/bin/python -m bench.kokoro_first --voices DIR [--runs 3]   (needs edged[ja,zh])

Cost: the tokens of a long line cut to N tokens (10 ... 100), one inference each, the median of
`runs` after a warm-up, 2 threads. First audio: every line of the Mandarin and Japanese
development sets (tests/data/intelligibility/dev_*.tsv), time from `stream()` to its first chunk,
with the first piece as before (whole clauses up to 60 tokens) and as now, alternating per line.
Results: bench/results/kokoro_first.json (with the machine block).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from .common import REPO_DIR, machine_info, summary, table, write_result

LENGTHS = (10, 15, 20, 25, 30, 40, 50, 60, 80, 100)
LONG = {"zh": "明天上午九点在三楼会议室开会，请大家准时参加，并带上上周的报告和这周的计划。",
        "ja": "明日の午前九時に三階の会議室で会議があります。皆さん時間通りに参加してください。"}
VOICES = {"zh": "zf_xiaoxiao", "ja": "jf_alpha"}
SETS = REPO_DIR / "tests" / "data" / "intelligibility"


def _lines(language: str) -> list[str]:
    rows = (SETS / f"dev_{language}.tsv").read_text(encoding="utf-8").splitlines()
    return [row.split("\t")[0] for row in rows if row and not row.startswith("#")]


def _median_s(action: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cost(voice: Any, language: str, runs: int) -> dict[int, float]:
    """Seconds of one inference per piece length in tokens."""
    ids = [i for piece in voice.tokens(LONG[language] * 2) for i in piece]
    voice.stream("。")  # nothing: the generator is not started
    out = {}
    for length in LENGTHS:
        row = voice._style[length - 1]
        voice._model.run(ids[:length], row, 1.0)  # warm-up at this shape
        out[length] = round(_median_s(lambda n=length, r=row: voice._model.run(ids[:n], r, 1.0),
                                       runs), 3)
    return out


def first_audio(voice: Any, language: str, runs: int) -> dict[str, Any]:
    """First-chunk time per line, the first piece as before and as now (alternating)."""
    now = (voice.first_tokens, voice.first_min_tokens)
    times: dict[str, list[float]] = {"before": [], "after": []}
    first_len: dict[str, list[int]] = {"before": [], "after": []}
    for text in _lines(language):
        for _ in range(runs):
            for label, (first, least) in (("before", (60, None)), ("after", now)):
                voice.first_tokens, voice.first_min_tokens = first, least
                first_len[label].append(len(voice.tokens(text)[0]))
                start = time.perf_counter()
                next(iter(voice.stream(text)))
                times[label].append(time.perf_counter() - start)
    voice.first_tokens, voice.first_min_tokens = now
    return {label: {"first_audio_s": summary(times[label], 3),
                    "first_piece_tokens": summary(first_len[label], 1)} for label in times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--voices", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cost-only", action="store_true")
    args = parser.parse_args()
    import tempfile

    from edged.voice.kokoro.voice import load_kokoro

    result: dict[str, Any] = {"machine": machine_info(("onnxruntime", "numpy", "misaki")),
                              "threads": 2, "runs": args.runs, "languages": {}}
    with tempfile.TemporaryDirectory() as cache:
        for language, style in VOICES.items():
            voice = load_kokoro(style, cache_dir=Path(cache), dirs=[args.voices.resolve()],
                                threads=2, sentence_pause_ms=200, date_order="mdy")
            entry: dict[str, Any] = {"voice": f"kokoro:{style}",
                                     "inference_s_by_tokens": cost(voice, language, args.runs)}
            print(language, entry["inference_s_by_tokens"], flush=True)
            if not args.cost_only:
                entry.update(first_audio(voice, language, args.runs))
                print(language, {k: entry[k] for k in ("before", "after")}, flush=True)
            result["languages"][language] = entry
    if args.cost_only:
        return
    print(table([(lang, e[label]["first_audio_s"]["median"], e[label]["first_piece_tokens"]["median"],
                  label) for lang, e in result["languages"].items() for label in ("before", "after")],
                ["lang", "first audio s (median)", "first piece tokens", "first piece"]))
    print(write_result("kokoro_first", result))


if __name__ == "__main__":
    main()
