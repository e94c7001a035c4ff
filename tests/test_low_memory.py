"""The low-memory profile (docs/pi.md): what it sets, and the three mechanisms it turns on.

- `voice.max_window_frames`: decoder windows no longer than that, the audio as before;
- `voice.memory_arena: false`: ONNX Runtime without its arena, large blocks unmapped when freed:
  the memory an inference took goes back (the real default voice, A/B in two processes; not in
  the profile: twice the CPU);
- `voice.sleep_after_s`: the voice starts asleep, a stream wakes it, it sleeps again once idle,
  never under a stream, and its audio is the same whether it slept or not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edged.config import ConfigError, load_config, parse_config
from edged.voice import PiperVoice, load_voice
from edged.voice.piper.sleep import SleepingModel
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.internals import wait_asleep, wakes
from tests.harness.paths import EDGED, ROOT
from tests.harness.tiny_voice import LONG, VITS_HOP, make_tiny_vits_voice
from tests.harness.tiny_voice import prepare_voice as _prepare
from tests.harness.voices import PreparedVoices
from tests.harness.watcher import Watcher


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "edged.yaml"
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------- the profile
def test_low_memory_profile_sets_its_keys(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "profile: low-memory\n"))
    assert config.profile == "low-memory"
    assert (config.voice.parallel_windows, config.voice.max_window_frames,
            config.voice.memory_arena, config.voice.sleep_after_s,
            config.voice.precision) == (1, 48, True, 60.0, "int8")
    assert (config.limits.memory_mb, config.cache.memory_mb, config.http.enabled) == (160, 4, False)
    default = load_config(_config(tmp_path, "voice: {speed: 1.0}\n"))
    assert default.profile == "default"
    assert (default.voice.memory_arena, default.voice.sleep_after_s, default.http.enabled,
            default.voice.max_window_frames, default.limits.memory_mb) == (True, None, True, None, 400)


def test_keys_the_file_sets_win_over_its_profile(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "\n".join([
        "profile: low-memory",
        "voice: {sleep_after_s: 300, speed: 1.2}",
        "http: {enabled: true}",
        "limits: {memory_mb: 200}",
        "cache:",  # left empty: the profile's value stays
        ""])))
    assert config.voice.sleep_after_s == 300 and config.voice.speed == 1.2
    assert config.voice.max_window_frames == 48  # the profile's, where the file says nothing
    assert config.http.enabled and config.http.enabled_given
    assert config.limits.memory_mb == 200 and config.cache.memory_mb == 4


@pytest.mark.parametrize(("text", "error"), [
    ("profile: tiny\n", "profile: expected one of default, low-memory, got 'tiny'"),
    ("profile: [low-memory]\n", "profile: expected one of default, low-memory"),
    ("voice: {max_window_frames: 12}\n", "voice.max_window_frames: 12 is out of range 24..384"),
    ("voice: {sleep_after_s: 0}\n", "voice.sleep_after_s: 0.0 is out of range 1.0..86400.0"),
    ("voice: {memory_arena: no-thanks}\n", "voice.memory_arena: expected true or false"),
])
def test_bad_profile_values_name_the_key(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ConfigError, match="^" + error.replace("[", r"\[").replace(".", r"\.")):
        load_config(_config(tmp_path, text))


def test_check_config_names_the_profile(tmp_path: Path) -> None:
    path = _config(tmp_path, f"profile: low-memory\ncache: {{dir: {tmp_path / 'cache'}}}\n"
                             f"mqtt: {{state_dir: {tmp_path / 'state'}}}\n")
    done = subprocess.run([sys.executable, "-m", "edged", "check-config", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"edged: config OK: {path} (profile low-memory)"


# -------------------------------------------------------------------------- decoder windows
def test_max_window_frames_caps_the_windows_and_the_audio_stays(tmp_path: Path) -> None:
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    prepared = _prepare(onnx_path, tmp_path / "cache")
    uncapped = PiperVoice.load(onnx_path, prepared=prepared, memory_mb=4000)
    capped = PiperVoice.load(onnx_path, prepared=prepared, memory_mb=4000, max_window=30)
    assert prepared.largest_window(1, 4000) > 30  # the cap is what limits these windows
    sizes = [len(c.samples) // VITS_HOP for c in capped.stream(LONG)]
    assert max(sizes) <= 30 < max(len(c.samples) // VITS_HOP for c in uncapped.stream(LONG))
    a, b = uncapped.synthesize(LONG).samples, capped.synthesize(LONG).samples
    assert a.size == b.size and np.abs(a.astype(np.int32) - b).max() <= 1


# ------------------------------------------------------------------------------ the arena
_RSS_CHILD = """
import json, sys
from pathlib import Path
from edged.config import parse_config
from edged.voice import load_voice
def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
config = parse_config(json.loads(sys.argv[1]), Path(sys.argv[2]))
voice = load_voice(config)
voice.synthesize("Ready.")
before = rss()
audio = voice.synthesize(sys.argv[3], voice.settings(noise_scale=0, noise_w=0)).samples
print(json.dumps({"grew_mb": rss() - before, "sum": int(audio.astype("int64").sum())}))
"""


@pytest.mark.voice
@pytest.mark.timeout(300)
def test_without_the_arena_an_inference_gives_its_memory_back(
        tmp_path: Path, default_voice_path: Path, prepared_voices: PreparedVoices) -> None:
    """The real default voice, one process each way: after a long line, RSS has grown by what
    ONNX Runtime's arena keeps (tens of MB, measured 141 vs 123 MB in the daemon); without it,
    by a fraction of that. The same samples both ways (noise 0: the arena changes no
    arithmetic)."""
    from tests.harness.asr import corpus_lines

    prepared_voices.seed(tmp_path / "cache")

    longest = max(corpus_lines()[0], key=len)
    grew = {}
    for arena in (True, False):
        config = {"voice": {"name": str(default_voice_path), "memory_arena": arena,
                            "parallel_windows": 1},
                  "cache": {"dir": str(tmp_path / "cache")}}
        out = subprocess.run([sys.executable, "-c", _RSS_CHILD, json.dumps(config),
                              str(tmp_path), longest], capture_output=True, text=True,
                             timeout=240, check=True)
        grew[arena] = json.loads(out.stdout)
    assert grew[True]["sum"] == grew[False]["sum"]
    assert grew[False]["grew_mb"] < grew[True]["grew_mb"] / 2, grew


# ----------------------------------------------------------------------------- sleeping
def _sleeping(tmp_path: Path, idle_s: float) -> tuple[PiperVoice, SleepingModel]:
    """The tiny VITS voice, prepared, loaded to sleep after `idle_s` (the config allows no less
    than a second; the mechanism any time)."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    voice = PiperVoice.load(onnx_path, prepared=_prepare(onnx_path, tmp_path / "cache"),
                       sleep_after_s=idle_s)
    model = voice._model
    assert isinstance(model, SleepingModel)
    return voice, model


def test_a_sleeping_voice_starts_asleep_and_wakes_for_a_stream(tmp_path: Path) -> None:
    with wakes() as woke:
        sleeping, model = _sleeping(tmp_path, 3600)
        awake = PiperVoice.load(sleeping.onnx_path,
                                prepared=_prepare(sleeping.onnx_path, tmp_path / "cache"))
        assert model.input_names == {"input", "input_lengths", "scales"}  # from the manifest
        assert not model.awake and woke.count == 0
        assert sleeping.pieces(LONG)  # phonemes and settings need no session
        assert np.array_equal(sleeping.synthesize(LONG).samples, awake.synthesize(LONG).samples)
        assert model.awake and woke.count == 1
        sleeping.synthesize(LONG)
        assert woke.count == 1  # still awake: no second open


def test_it_falls_asleep_when_idle_and_wakes_again(tmp_path: Path) -> None:
    with wakes() as woke:
        voice, model = _sleeping(tmp_path, 0.05)
        first = voice.synthesize(LONG).samples
        assert wait_asleep(model) and not model.awake
        assert np.array_equal(voice.synthesize(LONG).samples, first)
        assert woke.count == 2 and wait_asleep(model)


def test_it_never_sleeps_under_a_stream(tmp_path: Path) -> None:
    """A stream paused between two steps for longer than idle_s keeps the sessions: the timer
    runs only when no stream holds them, and sleep() refuses while one does."""
    with wakes() as woke:
        voice, model = _sleeping(tmp_path, 0.01)
        stream = voice.stream(f"{LONG} {LONG}")
        next(stream)
        assert model.awake and not model.sleep()
        rest = list(stream)
        assert rest and woke.count == 1
    assert model.sleep() and not model.awake


def test_two_streams_at_once_share_one_wake(tmp_path: Path) -> None:
    with wakes() as woke:
        voice, model = _sleeping(tmp_path, 3600)
        a, b = voice.stream(LONG), voice.stream(LONG)
        next(a)
        next(b)
        a.close()  # one stream ends: the other still holds the sessions
        assert not model.sleep() and model.awake
        list(b)
        assert model.sleep() and woke.count == 1


def test_load_voice_with_the_profile_sleeps(tmp_path: Path) -> None:
    """Through the config as the daemon loads it. The tiny voice is under the size worth
    preparing, so its inputs are known only once it is open: it starts awake and falls asleep
    once idle (the real, prepared voice starts asleep: test_daemon_voice)."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    config = parse_config({"profile": "low-memory",
                           "voice": {"name": str(onnx_path), "sleep_after_s": 1},
                           "cache": {"dir": str(tmp_path / "cache")}}, tmp_path)
    voice = load_voice(config)
    assert isinstance(voice, PiperVoice)
    model = voice._model
    assert isinstance(model, SleepingModel) and model.awake
    assert wait_asleep(model)
    assert voice.synthesize(LONG).samples.size > 0 and model.awake


# ------------------------------------------------------------------------------ the daemon
def _vm_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.voice
@pytest.mark.timeout(300)
def test_the_daemon_on_the_profile_speaks_cached_phrases_asleep(
        tmp_path: Path, broker: Broker, unique_prefix: str, default_voice_path: Path,
        prepared_voices: PreparedVoices) -> None:
    """The real default voice on `profile: low-memory`, prepared and its pinned phrase made by
    `edged cache warm` as Ansible does: the daemon starts with the voice asleep, a cached phrase
    leaves it asleep, an uncached one wakes it, and once idle it sleeps again and the process
    gives the sessions' memory back: their arenas are their own, so the process returns to
    within 25 MB of what it held before it woke (measured 16: ONNX Runtime's code pages stay;
    with the process-wide arena it kept 36). The state says the profile."""
    phrase = "The front door is open."
    w = Watcher(broker.port, unique_prefix)
    d = DaemonProc(tmp_path / "d", broker.port, unique_prefix, default_voice_path,
                   profile="low-memory", voice={"sleep_after_s": 1},
                   cache={"dir": "cache", "phrases": [phrase]})
    d.write()
    prepared_voices.seed(tmp_path / "d" / "cache")  # the phrase is made here, not the voice
    subprocess.run([*EDGED, "cache", "warm", "--config", str(d.path)], cwd=ROOT, check=True,
                   capture_output=True, timeout=240)
    try:
        d.start(w)
        wait_log(d, "sleeps until an announcement needs it")
        assert "Profile low-memory: voice.precision=int8, voice.parallel_windows=1" in d.log_text()
        assert d.proc is not None
        w.say({"text": phrase, "id": "cached"})
        assert w.final("cached", timeout=30)["cached"] is True
        assert " awake: " not in d.log_text()
        state = w.wait(lambda m: m.topic == f"{unique_prefix}/state").json()
        assert state["profile"] == "low-memory"
        asleep_mb = _vm_rss_mb(d.proc.pid)
        w.say({"text": "The garage door has been open for fifteen minutes.", "id": "new"})
        done = w.final("new", timeout=60)
        assert done["event"] == "finished" and done["cached"] is False
        awake_mb = _vm_rss_mb(d.proc.pid)
        assert " awake: sessions opened in " in d.log_text()
        wait_log(d, " asleep: ", timeout=30)
        again_mb = _vm_rss_mb(d.proc.pid)
        assert again_mb < awake_mb - 20 and again_mb < asleep_mb + 25, (asleep_mb, awake_mb,
                                                                        again_mb)
    finally:
        d.stop()
        w.close()
