"""MQTT daemon latency and throughput through a real mosquitto on loopback.

For each audio mode (one WAV per announcement, and `mqtt.stream_audio` parts) a fresh
`edged run` (output: publish, en_US-joe-medium) serves, one request at a time:
  - a cached phrase, --cached times: publish -> `started` event, publish -> first audio byte
    (the first message on <p>/audio/<id> or <p>/audio/<id>/0);
  - distinct uncached texts, --uncached times: the same two figures, plus synth_ms.
Then sustained throughput of cached requests with --window requests outstanding.
Writes bench/results/mqtt.json. Run: .venv/bin/python bench/mqtt.py  (~2 min)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

# bench/http.py would stand in for the standard library's `http` (which paho imports) while
# bench/ is on sys.path, as it is for a script run from there: import it with bench/ off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import http.client  # noqa: E402, F401

import paho.mqtt.client as mqtt  # noqa: E402
import yaml  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from common import REPO_DIR, free_port, machine_info, proc_mb, summary, table, wait_port, write_result  # noqa: E402

PHRASE = "Someone is at the front door."
_ROOMS = ["kitchen", "bedroom", "bathroom", "living room", "garage", "hall", "office", "attic"]
_THINGS = ["window", "door", "light", "heater", "fan", "blind", "tap", "plug", "alarm", "lamp"]


class Client:
    """Publishes requests and records when each answer arrives (monotonic clock)."""

    def __init__(self, port: int, prefix: str) -> None:
        self.prefix = prefix
        self.cond = threading.Condition()
        self.first: dict[tuple[str, str], float] = {}  # (id, what) -> arrival time
        self.finished: dict[str, dict] = {}
        self.online = threading.Event()
        ready = threading.Event()
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-{uuid.uuid4().hex[:6]}",
                        protocol=MQTTProtocolVersion.MQTTv5)
        c.on_socket_open = lambda c, u, s: s.setsockopt(socket.IPPROTO_TCP,
                                                        socket.TCP_NODELAY, 1)
        c.on_message = self._on_message
        c.on_subscribe = lambda *a: ready.set()
        c.connect("127.0.0.1", port)
        c.subscribe([(f"{prefix}/event", 1), (f"{prefix}/audio/#", 1),
                     (f"{prefix}/availability", 1)])
        c.loop_start()
        ready.wait(5)
        self.c = c

    def _on_message(self, _c: Any, _u: Any, msg: mqtt.MQTTMessage) -> None:
        now = time.monotonic()
        topic = msg.topic[len(self.prefix) + 1:]
        with self.cond:
            if topic == "availability":
                if msg.payload == b"online":
                    self.online.set()
            elif topic == "event":
                event = json.loads(msg.payload)
                self.first.setdefault((event["id"], event["event"]), now)
                if event["event"] in ("finished", "failed", "rejected"):
                    self.finished[event["id"]] = event
            else:  # audio/<id> or audio/<id>/<n>
                rid = topic.split("/")[1]
                self.first.setdefault((rid, "audio"), now)
            self.cond.notify_all()

    def send(self, text: str, rid: str) -> float:
        payload = json.dumps({"text": text, "id": rid})
        sent = time.monotonic()
        self.c.publish(f"{self.prefix}/say", payload, qos=1)
        return sent

    def wait_done(self, rid: str, timeout: float = 60) -> dict:
        with self.cond:
            ok = self.cond.wait_for(lambda: rid in self.finished and (rid, "audio") in self.first,
                                    timeout)
        if not ok:
            raise TimeoutError(f"no answer for {rid}: {self.finished.get(rid)}")
        return self.finished[rid]

    def close(self) -> None:
        self.c.disconnect()
        self.c.loop_stop()


def _start_daemon(work: Path, port: int, prefix: str, stream: bool) -> subprocess.Popen:
    config = {
        "device_id": "bench", "output": "publish", "log_level": "warning",
        "mqtt": {"host": "127.0.0.1", "port": port, "topic_prefix": prefix,
                 "client_id": f"edged-bench-{uuid.uuid4().hex[:6]}", "stream_audio": stream,
                 "state_dir": str(work / f"state-{uuid.uuid4().hex[:6]}")},
        "limits": {"queue": 50, "max_chars": 500},
        "cache": {"dir": str(work / "cache"), "phrases": []},
    }
    path = work / f"edged-{'stream' if stream else 'whole'}.yaml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.Popen([sys.executable, "-m", "edged", "run", "--config", str(path)],
                            cwd=REPO_DIR, stdout=subprocess.DEVNULL,
                            stderr=open(work / "daemon.log", "ab"))  # noqa: SIM115


def _sequential(client: Client, texts: list[str], tag: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"started_ms": [], "first_audio_ms": [], "synth_ms": [],
                                   "daemon_first_audio_ms": []}
    for i, text in enumerate(texts):
        rid = f"{tag}-{i}"
        sent = client.send(text, rid)
        event = client.wait_done(rid)
        if event["event"] != "finished":
            raise RuntimeError(f"{rid}: {event}")
        out["started_ms"].append(1000 * (client.first[(rid, "started")] - sent))
        out["first_audio_ms"].append(1000 * (client.first[(rid, "audio")] - sent))
        out["synth_ms"].append(event["synth_ms"])
        out["daemon_first_audio_ms"].append(event["first_audio_ms"])
    return out


def _throughput(client: Client, n: int, window: int) -> dict[str, Any]:
    start = time.monotonic()
    outstanding: list[str] = []
    for i in range(n):
        rid = f"tp-{i}"
        client.send(PHRASE, rid)
        outstanding.append(rid)
        if len(outstanding) >= window:
            client.wait_done(outstanding.pop(0))
    for rid in outstanding:
        client.wait_done(rid)
    elapsed = time.monotonic() - start
    kinds = [client.finished[f"tp-{i}"]["event"] for i in range(n)]
    return {"requests": n, "window": window, "elapsed_s": round(elapsed, 3),
            "requests_per_s": round(n / elapsed, 1), "finished": kinds.count("finished")}


def _peak_rss_mb(pid: int) -> float | None:
    try:
        return round(proc_mb(pid, "VmHWM"), 1)
    except (OSError, LookupError):
        return None


def _start_broker(work: Path, nodelay: bool) -> tuple[subprocess.Popen, int]:
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    port = free_port()
    conf = work / f"mosquitto-{port}.conf"
    conf.write_text(("user root\n" if os.geteuid() == 0 else "")
                    + f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                    + ("set_tcp_nodelay true\n" if nodelay else ""))
    broker = subprocess.Popen([mosquitto, "-c", str(conf)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    wait_port(port)
    return broker, port


def _run_mode(work: Path, port: int, mode: str, *, stream: bool, n_cached: int,
              n_uncached: int, n_throughput: int, window: int) -> dict[str, Any]:
    prefix = f"bench/{uuid.uuid4().hex[:8]}"
    tag = uuid.uuid4().hex[:6]  # request ids per run
    client = Client(port, prefix)
    started = time.monotonic()
    daemon = _start_daemon(work, port, prefix, stream=stream)
    try:
        if not client.online.wait(120):
            raise RuntimeError(f"daemon did not come online; see {work}/daemon.log")
        block: dict[str, Any] = {"start_to_online_s": round(time.monotonic() - started, 2)}
        client.send(PHRASE, f"warm-{tag}")
        client.wait_done(f"warm-{tag}")
        cached = _sequential(client, [PHRASE] * n_cached, f"c-{tag}")
        block["cached"] = {k: summary(v) for k, v in cached.items() if k != "synth_ms"}
        if n_uncached:
            texts = [f"Reminder {i + 1}: the {_THINGS[i % 10]} in the "
                     f"{_ROOMS[(i // 10) % 8]} needs attention ({tag})."
                     for i in range(n_uncached)]
            uncached = _sequential(client, texts, f"u-{tag}")
            block["uncached"] = {k: summary(v) for k, v in uncached.items()}
        if n_throughput:
            block["throughput_cached"] = _throughput(client, n_throughput, window)
        block["daemon_peak_rss_mb"] = _peak_rss_mb(daemon.pid)
        return block
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cached", type=int, default=200)
    parser.add_argument("--uncached", type=int, default=100)
    parser.add_argument("--throughput", type=int, default=1000)
    parser.add_argument("--window", type=int, default=8)
    args = parser.parse_args()
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    results: dict[str, Any] = {"machine": machine_info(("onnxruntime", "numpy", "paho-mqtt")),
                               "broker": subprocess.run([mosquitto, "-h"], capture_output=True,
                                                        text=True).stdout.splitlines()[0],
                               "voice": "en_US-joe-medium", "modes": {}}
    plan = [  # (mode, stream_audio, broker set_tcp_nodelay, uncached, throughput)
        ("whole", False, True, args.uncached, args.throughput),
        ("stream", True, True, args.uncached, 0),
        ("whole, broker without set_tcp_nodelay", False, False, 0, 0),
    ]
    rows = []
    with tempfile.TemporaryDirectory(prefix="edged-bench-mqtt-") as tmp:
        work = Path(tmp)
        for mode, stream, nodelay, n_uncached, n_tp in plan:
            broker, port = _start_broker(work, nodelay)
            try:
                block = _run_mode(work, port, mode, stream=stream, n_cached=args.cached,
                                  n_uncached=n_uncached, n_throughput=n_tp, window=args.window)
            finally:
                broker.terminate()
                broker.wait(5)
            block["broker_set_tcp_nodelay"] = nodelay
            results["modes"][mode] = block
            for what in ("cached", "uncached"):
                if what in block:
                    s, a = block[what]["started_ms"], block[what]["first_audio_ms"]
                    rows.append([mode, what, s["n"], f"{s['median']:.2f}", f"{s['p95']:.2f}",
                                 f"{a['median']:.2f}", f"{a['p95']:.2f}"])
    print(table(rows, ["mode", "phrase", "n", "started p50 ms", "p95", "first audio p50 ms",
                       "p95"]))
    tp = results["modes"]["whole"]["throughput_cached"]
    print(f"throughput (cached, window {tp['window']}): {tp['requests_per_s']} requests/s; "
          f"daemon peak RSS {results['modes']['whole']['daemon_peak_rss_mb']} MB")
    goal = results["modes"]["whole"]["cached"]["first_audio_ms"]["median"]
    results["goal_cached_first_audio_p50_ms"] = {"goal": 10.0, "measured": goal,
                                                 "met": goal <= 10.0}
    print(f"goal: cached publish -> audio p50 <= 10 ms: measured {goal:.2f} ms")
    print(f"wrote {write_result('mqtt', results)}")


if __name__ == "__main__":
    main()
