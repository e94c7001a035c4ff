"""The soak (issue 18): announcements of every kind for a while, the broker and the daemon
SIGKILLed at random moments, and the books kept. Used by tests/test_soak.py (short, in `make
test`; 30 minutes in `make test-long`) and bench/soak.py (the figures and plots). Not a test.

One `edged run` (tiny voice, output: publish, member of group `soak`, HTTP and Wyoming on) on
one mosquitto. A driver sends `count` announcements at an even pace over `minutes`: cached
phrases, uncached texts, critical ones, group requests (MQTT), `/api/say` (HTTP), and Wyoming
`synthesize` calls beside them. The client keeps its side of at-least-once: an id without a
final event `retry_s` after it was last sent is sent again, same id, same channel (a broker
SIGKILL loses what it held; HTTP requests live only in the daemon). A collector records every
event (transport duplicates of a QoS 1 message carry the same `ts`, so events are counted by
(id, event, ts)), a sampler the daemon's RSS, open files and threads.

The books: every id has exactly one final outcome (one distinct final `ts`; a `repeat` answer
to a retry carries the original's), no id was finished twice ("Finished request <id>" in the
daemon's log at most once, one distinct `finished`), RSS flat over the last part of the run,
open files and threads back where they were once the load stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from wyoming.audio import AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from .broker import Broker
from .daemon import DaemonProc
from .ports import free_port
from .soak_books import close_books, memory_window

FINAL = ("finished", "failed", "rejected")
PHRASES = [f"The {room} {thing} is open." for room in ("kitchen", "hall", "garage", "attic")
           for thing in ("window", "door", "gate")]
KINDS = {"cached": 0.35, "uncached": 0.3, "critical": 0.05, "group": 0.15, "http": 0.15}
QUIET_FDS_SLACK, QUIET_THREADS_SLACK = 2, 1
"""Once the load stopped, at most this many more open files and threads than early in the
memory window (the books' bound: test_soak)."""
QUIET_S = 30.0
"""How long the quiet figures may take to come back within that bound."""


@dataclass
class SoakPlan:
    count: int = 500
    minutes: float = 1.0
    broker_kills: int = 2
    daemon_kills: int = 2
    daemon_kill_window: tuple[float, float] = (0.1, 0.9)
    """Daemon kills fall at random in this part of the run (the RSS window follows it)."""
    wyoming_every: int = 25
    """One Wyoming synthesize per this many announcements."""
    retry_s: float = 10.0
    drain_s: float = 120.0
    """After the last send, how long to wait (retrying) for the last final events."""
    sample_s: float = 1.0
    seed: int = 18
    burst: int = 1
    """Announcements sent at once (the pace is kept on average): work is in flight at a kill."""
    cache_memory_mb: int = 4
    """cache.memory_mb of the daemon: the phrase cache's memory tier is bounded by it and fills
    as uncached texts are made; small, it is full within minutes, so growth after that is not
    the cache (at the default 32 MB it took 21 minutes of this mix to fill)."""
    cache_max_mb: int = 20
    """cache.max_mb: the files' index in memory is bounded by it (one entry per file), and at
    this size the index is full within minutes (at 200 MB the tiny voice's files never fill it)."""
    session_expiry_s: int = 300
    """mqtt.session_expiry_s, which is also the window of the done-log: the ids it holds in
    memory are those of this many seconds (the default, a day, would grow through the run)."""


LONG_PLAN = SoakPlan(count=10_000, minutes=30.0, broker_kills=5, daemon_kills=5,
                     daemon_kill_window=(0.02, 0.32), retry_s=20.0, drain_s=180.0, sample_s=5.0,
                     burst=10)
"""make test-long and bench/soak.py: the daemon kills within the first 10 minutes, so the last
20 show one process's memory. With the tiny test voice: 5.6 announcements a second is more than
one synthesis worker makes with the real voice on 2 shared cores (tried: its queue grew by 4
a second), and the soak is about what is lost, not about the voice."""
SHORT_PLAN = SoakPlan(count=500, minutes=1.0, broker_kills=2, daemon_kills=2,
                      daemon_kill_window=(0.1, 0.6), retry_s=8.0, drain_s=90.0, sample_s=0.5,
                      burst=25)
"""make test: the daemon kills within the first 36 s, so the last process is sampled for at
least 24 s (the memory window needs 10 samples; a kill near the end left too few)."""
REAL_VOICE_PLAN = SoakPlan(count=300, minutes=5.0, broker_kills=0, daemon_kills=0,
                           wyoming_every=0, retry_s=60.0, drain_s=120.0, sample_s=5.0)
"""bench/soak.py's first-audio run with the real default voice: one announcement a second, the
same mix, no kills."""


def _cause(error: str) -> str:
    """An error without its ids and figures, so errors of one cause count together."""
    return re.sub(r"[0-9.]+", "N", re.sub(r"request \S+", "request <id>", error))[:80]


@dataclass
class Sent:
    kind: str
    first: float
    last: float
    sends: int = 1


@dataclass
class Books:
    sent: dict[str, Sent] = field(default_factory=dict)
    events: dict[str, set[tuple[str, float, bool]]] = field(default_factory=lambda: defaultdict(set))
    arrivals: list[tuple[float, str, str]] = field(default_factory=list)
    """(monotonic arrival, id, event) of each distinct event."""
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)
    final_ids: set[str] = field(default_factory=set)
    audio: Counter[str] = field(default_factory=Counter)
    samples: list[dict[str, float]] = field(default_factory=list)
    kills: list[dict[str, Any]] = field(default_factory=list)
    wyoming: Counter[str] = field(default_factory=Counter)
    resends: list[float] = field(default_factory=list)
    """When the client sent an id again (seconds into the run)."""
    why_failed: Counter[str] = field(default_factory=Counter)
    """The errors of failed and rejected outcomes, numbers blanked (a cause, not an id)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    cond: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.cond = threading.Condition(self.lock)

    def outstanding(self) -> list[str]:
        with self.lock:
            return [rid for rid in self.sent if rid not in self.final_ids]


class Collector:
    """An MQTT 5 client on the daemon's events and audio topics; reconnects and resubscribes."""

    def __init__(self, port: int, prefix: str, books: Books, t0: float) -> None:
        self.books, self.t0 = books, t0
        self.prefix = prefix
        self.subscribed = threading.Event()
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"soak-{uuid.uuid4().hex[:6]}",
                        protocol=MQTTProtocolVersion.MQTTv5)
        c.on_connect = lambda c, u, f, rc, p: c.subscribe(
            [(f"{prefix}/event", 1), (f"{prefix}/audio/+", 1), (f"{prefix}/availability", 1)])
        c.on_subscribe = lambda *a: self.subscribed.set()
        c.on_disconnect = lambda *a: self.subscribed.clear()
        c.on_message = self._on_message
        c.reconnect_delay_set(0.1, 0.5)
        c.connect_async("127.0.0.1", port, keepalive=10)
        c.loop_start()
        self.client = c
        self.online = threading.Event()

    def _on_message(self, _c: Any, _u: Any, msg: mqtt.MQTTMessage) -> None:
        now = time.monotonic() - self.t0
        topic = msg.topic[len(self.prefix) + 1:]
        b = self.books
        with b.cond:
            if topic == "availability":
                (self.online.set if msg.payload == b"online" else self.online.clear)()
            elif topic == "event":
                e = json.loads(msg.payload)
                key = (e["event"], e["ts"], bool(e.get("repeat")))
                if e["id"] in b.sent and key not in b.events[e["id"]]:
                    b.events[e["id"]].add(key)
                    b.arrivals.append((now, e["id"], e["event"]))
                    if e["event"] in FINAL:
                        b.final_ids.add(e["id"])
                        if e["event"] != "finished" and not e.get("repeat"):
                            b.why_failed[_cause(str(e.get("error")))] += 1
                    if e["event"] == "finished" and not e.get("repeat"):
                        b.finished.setdefault(e["id"], e)
            else:
                b.audio[topic.split("/", 1)[1]] += 1  # transport duplicates counted too
            b.cond.notify_all()

    def publish(self, topic: str, data: dict[str, Any]) -> None:
        self.client.publish(topic, json.dumps(data), qos=1)  # paho keeps it while offline

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Soak:
    def __init__(self, plan: SoakPlan, workdir: Path, voice: Path) -> None:
        self.plan, self.workdir = plan, workdir
        self.rng = random.Random(plan.seed)
        self.port = free_port()
        self.http_port, self.wyoming_port = free_port(), free_port()
        self.house = f"soak-house-{uuid.uuid4().hex[:6]}"
        self.prefix = f"soak/{uuid.uuid4().hex[:8]}"
        self.broker = Broker(workdir / "broker", f"listener {self.port} 127.0.0.1\n"
                             "allow_anonymous true\nmax_queued_messages 0\n", [self.port])
        self.daemon = DaemonProc(
            workdir / "daemon", self.port, self.prefix, voice, log_level="info",
            groups=["soak"], limits={"queue": 500, "stop_timeout_s": 5},
            mqtt={"group_prefix": self.house, "state_dir": "state",
                  "session_expiry_s": plan.session_expiry_s},
            http={"enabled": True, "port": self.http_port},
            wyoming={"enabled": True, "port": self.wyoming_port, "zeroconf": False},
            homeassistant={"discovery": False},
            cache={"dir": "cache", "phrases": PHRASES, "memory_mb": plan.cache_memory_mb,
                   "max_mb": plan.cache_max_mb})
        self.books = Books()
        self.t0 = time.monotonic()
        self.stop = threading.Event()
        self.down = threading.Lock()
        """Held while the broker or the daemon is down (kills never overlap)."""

    # -- sending ------------------------------------------------------------------------------

    def _send(self, rid: str, kind: str, text: str) -> None:
        request: dict[str, Any] = {"text": text, "id": rid}
        if kind == "critical":
            request["priority"] = "critical"
        if kind == "http":
            with contextlib.suppress(httpx.HTTPError):  # down: the retry sends it again
                httpx.post(f"http://127.0.0.1:{self.http_port}/api/say", json=request,
                           timeout=5.0)
            return
        topic = f"{self.house}/group/soak/say" if kind == "group" else f"{self.prefix}/say"
        self.collector.publish(topic, request)

    def _text(self, rid: str, kind: str) -> str:
        if kind in ("cached", "group", "http") and self.rng.random() < 0.7:
            return self.rng.choice(PHRASES)
        return f"Announcement {rid[-6:]} for the {self.rng.choice(['hall', 'yard', 'den'])}."

    def _drive(self) -> None:
        plan, b = self.plan, self.books
        period = 60 * plan.minutes / plan.count
        kinds, weights = list(KINDS), list(KINDS.values())
        for i in range(plan.count):
            wait = self.t0 + (i - i % plan.burst) * period - time.monotonic()
            if wait > 0 and self.stop.wait(wait):
                return
            rid = f"s{i:05d}-{uuid.uuid4().hex[:6]}"
            kind = self.rng.choices(kinds, weights)[0]
            now = time.monotonic() - self.t0
            with b.lock:
                b.sent[rid] = Sent(kind, now, now)
            self._texts[rid] = self._text(rid, kind)
            self._send(rid, kind, self._texts[rid])
            if plan.wyoming_every and i % plan.wyoming_every == 0:
                threading.Thread(target=self._wyoming, args=(i,), daemon=True).start()

    def _retry(self) -> None:
        while not self.stop.wait(1.0):
            now = time.monotonic() - self.t0
            if not self.down.acquire(blocking=False):
                continue  # something is down; retry once both are back
            try:
                for rid in self.books.outstanding():
                    sent = self.books.sent[rid]
                    if now - sent.last >= self.plan.retry_s:
                        sent.last, sent.sends = now, sent.sends + 1
                        self.books.resends.append(now)
                        self._send(rid, sent.kind, self._texts[rid])
            finally:
                self.down.release()

    def _wyoming(self, i: int) -> None:
        async def once() -> bool:
            async with AsyncTcpClient("127.0.0.1", self.wyoming_port) as client:
                await client.write_event(Synthesize(text=f"Wyoming check {i}.").event())
                while (event := await client.read_event()) is not None:
                    if AudioStop.is_type(event.type):
                        return True
            return False

        for _attempt in range(10):  # the daemon may be down for a moment: try again
            try:
                if asyncio.run(asyncio.wait_for(once(), 10.0)):
                    self.books.wyoming["ok"] += 1
                    return
            except (OSError, TimeoutError, asyncio.IncompleteReadError):
                pass
            self.books.wyoming["retried"] += 1
            if self.stop.wait(2.0):
                return
        self.books.wyoming["failed"] += 1

    # -- kills and samples -----------------------------------------------------------------------

    def _kill_times(self) -> list[tuple[float, str]]:
        span = 60 * self.plan.minutes
        lo, hi = self.plan.daemon_kill_window
        times = [(self.rng.uniform(0.05, 0.95) * span, "broker")
                 for _ in range(self.plan.broker_kills)]
        times += [(self.rng.uniform(lo, hi) * span, "daemon") for _ in range(self.plan.daemon_kills)]
        return sorted(times)

    def _kill(self, what: str) -> None:
        b = self.books
        at = time.monotonic() - self.t0
        with b.lock:
            in_flight = [rid for rid, evs in b.events.items()
                         if any(k == "queued" for k, _, _ in evs) and rid not in b.final_ids]
        with self.down:
            if what == "broker":
                self.broker.stop(signal.SIGKILL)
                self.stop.wait(self.rng.uniform(0.5, 2.0))
                self.broker.start()
            else:
                self.daemon.signal(signal.SIGKILL)
                self.daemon.wait()
                self._start_daemon()
            assert self.collector.subscribed.wait(30) and self.collector.online.wait(60)
        b.kills.append({"what": what, "at_s": round(at, 2),
                        "back_s": round(time.monotonic() - self.t0 - at, 2),
                        "in_flight": in_flight})

    def _start_daemon(self) -> None:
        self.collector.online.clear()
        self.daemon.start()
        self.pids.append(self.daemon.proc.pid if self.daemon.proc else 0)

    def _sample(self) -> None:
        while not self.stop.wait(self.plan.sample_s):
            pid = self.pids[-1]
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                fds = len(os.listdir(f"/proc/{pid}/fd"))
            except OSError:
                continue  # between a kill and the restart
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            self.books.samples.append({
                "t": round(time.monotonic() - self.t0, 2), "pid": pid,
                "rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 2),
                "fds": fds, "threads": int(fields["Threads"])})

    # -- the run ---------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        self._texts: dict[str, str] = {}
        self.pids: list[int] = []
        self.broker.start()
        self.collector = Collector(self.port, self.prefix, self.books, 0.0)
        assert self.collector.subscribed.wait(10)
        self._start_daemon()
        assert self.collector.online.wait(60), self.daemon.log_text()[-3000:]
        self.t0 = time.monotonic()
        self.collector.t0 = self.t0
        threads = [threading.Thread(target=f, daemon=True)
                   for f in (self._drive, self._retry, self._sample)]
        for t in threads:
            t.start()
        try:
            for at, what in self._kill_times():
                wait = self.t0 + at - time.monotonic()
                if wait > 0:
                    self.stop.wait(wait)  # the kills' schedule: waiting for the moment is the point
                self._kill(what)
            threads[0].join()
            self._drain()
        finally:
            self.stop.set()
            for t in threads:
                t.join(15)
        quiet = self._quiet_figures()
        self.collector.close()
        self.daemon.stop()
        self.broker.stop()
        return self.report(quiet)

    def _drain(self) -> None:
        b = self.books
        with b.cond:
            b.cond.wait_for(lambda: len(b.final_ids) >= len(b.sent), timeout=self.plan.drain_s)

    def _quiet_figures(self) -> dict[str, float]:
        """Open files and threads once the load stopped (the last clients gone): read until
        they are back within the books' bound, for at most QUIET_S. The daemon closes the last
        sockets and ends their threads a moment after the load; nothing tells when, so /proc is
        polled. Figures still above the bound then go into the books, which fail."""
        early = memory_window(self)
        start = time.monotonic()
        while True:
            figures = self._open_now()
            back = ("fds_early_min" not in early  # too few samples: the books fail on that
                    or (figures["fds"] <= early["fds_early_min"] + QUIET_FDS_SLACK
                        and figures["threads"] <= early["threads_early_min"] + QUIET_THREADS_SLACK))
            waited = time.monotonic() - start
            if back or waited > QUIET_S:
                return {**figures, "waited_s": round(waited, 2)}
            time.sleep(0.1)  # polling /proc: there is no event to wait on

    def _open_now(self) -> dict[str, int]:
        pid = self.pids[-1]
        status = Path(f"/proc/{pid}/status").read_text()
        threads = int(next(x for x in status.splitlines() if x.startswith("Threads:")).split()[1])
        return {"fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": threads}

    def report(self, quiet: dict[str, float]) -> dict[str, Any]:
        return close_books(self, quiet)
