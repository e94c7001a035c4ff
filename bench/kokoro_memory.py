"""Issue 26's memory figure: what `limits.memory_mb` the daemon needs with Piper and Kokoro both
speaking, under the work that runs beside a Kokoro piece.

    python -m bench.kokoro_memory [--memory-mb 512] [--rounds 4] [--voices DIR]

The daemon is `edged run` with the default Piper voice, the prepared Kokoro model (Mandarin,
kokoro:zm_yunjian) and `limits.memory_mb` as given, HTTP and Wyoming on, playing into an ALSA
`file` sink, in a cgroup v1 memory group limited as the Ansible role limits the unit
(MemoryMax = 1.28 x limits.memory_mb) when the machine has one. While `--rounds` long Mandarin
announcements (the corpus's longest line, 100-token pieces: the decoder's largest activations;
never cached) are published over MQTT and played, at the same time:
- two HTTP clients post /api/tts again and again, one Mandarin (Kokoro), one English (Piper);
- one Wyoming client asks for a long English story again and again.
Every MQTT announcement's final event is awaited. The figures: the daemon's peak RSS (VmHWM),
the cgroup's peak and OOM kills, what each source was answered (HTTP statuses, Wyoming errors
by code, MQTT final events), and whether the daemon is alive at the end. The memory guard
refuses new work while the process is above the limit ("busy": HTTP 503/429, a Wyoming error),
so a figure near the limit shows as refusals, not as a crash.

Writes bench/results/kokoro_memory.json (with the machine block).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.harness.daemon import peak_rss_mb

from .common import REPO_DIR, machine_info, table, write_result
from .critical import _STORY, Load, daemon_under_test
from .kokoro_prepared import LONGEST

_VOICE = "kokoro:zm_yunjian"
_TIMEOUT_S = 600.0


class _Beside(Load):
    """The work beside the Kokoro announcements (critical.Load's loop, counting and stopping)."""

    def _workers(self) -> list[Any]:
        return [lambda: self._post(_VOICE, LONGEST), lambda: self._post(None, _STORY[:400]),
                self._wyoming]

    def _post(self, voice: str | None, text: str) -> None:
        with httpx.Client(base_url=self._ctx["http"], timeout=_TIMEOUT_S) as client:
            while not self._stop.is_set():
                # Kokoro's text opens with a number read in Mandarin: one zh part, never cached
                # (a uuid made an English part, and the Mandarin one was cached after the first).
                body = {"text": f"第{uuid.uuid4().int % 100000}次。{text}" if voice else
                        f"Number {uuid.uuid4().hex[:6]}. {text}", **({"voice": voice} if voice
                                                                    else {})}
                status = client.post("/api/tts", json=body).status_code
                self._count(f"{'kokoro' if voice else 'piper'} {status}")


def measure(memory_mb: int, rounds: int, voices: Path, cache: Path) -> dict[str, Any]:
    finals: dict[str, int] = {}
    peak = None
    with daemon_under_test("kokoro-memory", memory_mb, True, cache) as (d, w, out):
        d.config["limits"]["memory_mb"] = memory_mb
        d.config["voice"]["dirs"] = [str(voices)]
        d.config["languages"] = {"zh": _VOICE}
        d.start(w, timeout=900)  # a fresh cache prepares both models first
        cfg = d.config
        beside = _Beside("beside", {"http": f"http://127.0.0.1:{cfg['http']['port']}",
                                    "wyoming_port": cfg["wyoming"]["port"]}).start()
        for n in range(rounds):
            rid = f"zh-{n}-{uuid.uuid4().hex[:6]}"
            w.say({"text": f"第{n + 1}次通知。{LONGEST}", "id": rid, "voice": _VOICE})
            final = w.final(rid, _TIMEOUT_S)["event"]
            finals[final] = finals.get(final, 0) + 1
        beside.stop()
        alive = d.alive()
        if d.proc is not None:
            peak = peak_rss_mb(d.proc.pid)
    return {"memory_mb": memory_mb, "rounds": rounds, "mqtt_finals": finals,
            "beside": dict(sorted(beside.counts.items())), "alive": alive,
            "daemon_peak_rss_mb": peak, "cgroup": out["cgroup"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memory-mb", type=int, nargs="+", default=[512])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--voices", type=Path, default=REPO_DIR / ".venv" / "edged-voices")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "edged-bench-cache")
    ap.add_argument("--name", default="kokoro_memory", help="results file name")
    args = ap.parse_args()
    machine = machine_info()
    started = time.perf_counter()
    rows = [measure(mb, args.rounds, args.voices.resolve(), args.cache) for mb in args.memory_mb]
    print(table([[r["memory_mb"], r["daemon_peak_rss_mb"], (r["cgroup"] or {}).get("peak_mb"),
                   (r["cgroup"] or {}).get("oom_kills"), r["mqtt_finals"], r["beside"],
                   r["alive"]] for r in rows],
                ["memory_mb", "peak RSS MB", "cgroup peak MB", "OOM kills", "MQTT finals",
                 "beside", "alive"]))
    path = write_result(args.name, {"machine": machine, "voice": _VOICE, "rows": rows,
                                    "seconds": round(time.perf_counter() - started, 1)})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
