"""Helpers shared by the bench modules: machine block, percentiles, RSS, results, workers.

Nothing here imports edged, so a worker process can use it without paying for edged's imports.
Brokers, daemons, MQTT clients and ports come from the tests' harness (tests.harness).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
REPO_DIR = BENCH_DIR.parent
CORPUS_DIR = REPO_DIR / "tests" / "data" / "corpus"
"""The announcement corpus (the tests' copy of the team's corpus)."""


# ----------------------------------------------------------------------- machine
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _mem_total_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info(packages: Sequence[str] = ("onnxruntime", "numpy")) -> dict[str, Any]:
    """The "machine" block every bench/results/*.json carries."""
    flags = _cpu_flags()
    return {
        "cpu_model": _cpu_model(),
        "cpu_flags_of_note": sorted(flags & {"avx", "avx2", "avx512f", "avx512_vnni", "avx_vnni",
                                             "fma", "f16c", "neon", "asimd", "asimddp"}),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "ram_mb": _mem_total_mb(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "versions": {name: package_version(name) for name in packages},
        "loadavg_at_start": list(os.getloadavg()),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


# ------------------------------------------------------------------------ figures
def percentile(values: Iterable[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), like numpy's default."""
    data = sorted(values)
    if not data:
        raise ValueError("percentile of no values")
    pos = (len(data) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summary(values: Iterable[float], digits: int = 4) -> dict[str, float | int]:
    """n, median, p95, mean, min, max of a list of figures."""
    data = list(values)
    if not data:
        return {"n": 0}
    return {
        "n": len(data),
        "median": round(statistics.median(data), digits),
        "p95": round(percentile(data, 95), digits),
        "mean": round(statistics.fmean(data), digits),
        "min": round(min(data), digits),
        "max": round(max(data), digits),
    }


def ratio(ours: float | None, theirs: float | None, digits: int = 3) -> float | None:
    if ours is None or not theirs:
        return None
    return round(ours / theirs, digits)


# ---------------------------------------------------------------------------- RSS
def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident set of this process (or RUSAGE_CHILDREN) in MB; Linux reports KiB."""
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)


def proc_mb(pid: int | str = "self", field: str = "VmRSS") -> float:
    """A memory figure of a process in MB from /proc/<pid>/status (VmRSS: now, VmHWM: its
    peak); Linux reports KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise LookupError(f"no {field} in /proc/{pid}/status")


def rss_now_mb() -> float:
    """Current resident set of this process in MB (VmRSS)."""
    return round(proc_mb(), 1)


# ------------------------------------------------------------------------ workers
def emit(event: str, **fields: Any) -> None:
    """Worker side: one JSON line on stdout, flushed, stamped with CLOCK_MONOTONIC.

    CLOCK_MONOTONIC is system-wide on Linux, so the parent can subtract its own spawn time.
    """
    fields = {"event": event, "t_mono": time.monotonic(), **fields}
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def run_worker(argv: Sequence[str], *, cpus: Sequence[int] | None = None,
               env: dict[str, str] | None = None, timeout_s: float = 600) -> dict[str, Any]:
    """Spawn a worker in a fresh process and collect its `emit` lines.

    Returns {"spawn_mono": t, "events": [...], "ru_maxrss_mb": peak RSS from wait4,
    "wall_s": spawn to exit, "returncode": rc, "stderr": tail}. `cpus` pins the child with
    taskset (so every thread it starts inherits the mask).
    """
    cmd = list(argv)
    if cpus is not None:
        cmd = ["taskset", "-c", ",".join(str(c) for c in cpus), *cmd]
    events: list[dict[str, Any]] = []
    # stderr goes to a file: a pipe nobody reads while stdout is read could fill and block.
    with tempfile.TemporaryFile("w+") as err_file:
        spawn = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_file, text=True,
                                cwd=REPO_DIR, env={**os.environ, **(env or {})})
        killer = threading.Timer(timeout_s, proc.kill)
        killer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("{"):
                    events.append(json.loads(line))
            # wait4 gives the child's own rusage (ru_maxrss of that process alone).
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err_file.seek(0)
        stderr = err_file.read()
    return {
        "spawn_mono": spawn,
        "events": events,
        "ru_maxrss_mb": round(usage.ru_maxrss / 1024, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "wall_s": round(time.monotonic() - spawn, 3),
        "returncode": proc.returncode,
        "stderr": stderr[-2000:],
    }


def write_result(name: str, data: dict[str, Any]) -> Path:
    """bench/results/<name>.json, pretty-printed."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    return path


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """A plain fixed-width text table."""
    cells = [[str(h) for h in header]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)

