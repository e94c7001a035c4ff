"""Phrase cache: keys, checksummed atomic entries, tiers, eviction, templates, degraded mode.

Real files, real processes, the tiny ONNX voice; the real voice only for the shipped config.
"""

from __future__ import annotations

import json
import logging
import os
import pty
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from edged.audio import Audio
from edged.cache import PhraseCache, WarmReport, expand_phrases, folder, keys, store, warm
from edged.config import CacheConfig, ConfigError
from edged.voice import PiperVoice
from tests.harness.kokoro_seed import seed_cache
from tests.harness.paths import EDGED, ROOT
from tests.harness.tiny_voice import make_tiny_voice
from tests.harness.voices import PreparedVoices

_TIMEOUT_S = 60
_RATE = 16000
_MB = 1 << 20
_ROOMS = ["kitchen", "bedroom", "bathroom", "living room", "garage", "attic"]
_PHRASES = [
    "Good morning.",
    "The washing machine has finished.",
    {"text": "The {room} window is open.", "slots": {"room": _ROOMS}},
]


def _audio(n_samples: int, seed: int = 0) -> Audio:
    rng = np.random.default_rng(seed)
    return Audio(rng.integers(-20000, 20000, n_samples, dtype=np.int16), _RATE)


def _key(i: int) -> str:
    return f"{i:064x}"


def _folder_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.glob("??/*.pcm"))


def _write_config(tmp_path: Path, voice_path: Path, phrases: list | None = None,
                  **cache: object) -> Path:
    data = {"voice": {"name": str(voice_path)},
            "cache": {"dir": str(tmp_path / "cache"), "phrases": phrases or _PHRASES, **cache}}
    path = tmp_path / "edged.yaml"
    path.write_text(yaml.safe_dump(data))
    seed_cache(tmp_path / "cache")  # `cache warm` prepares Kokoro too: once per session here
    return path


def _edged(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EDGED, *args], capture_output=True, text=True, timeout=_TIMEOUT_S,
                          check=False, **kwargs)


@pytest.fixture(scope="module")
def tiny_voice(tiny_voice_path: Path) -> PiperVoice:
    return PiperVoice.load(tiny_voice_path)


# ---------------------------------------------------------------- store and tiers


def test_put_get_memory_then_disk_after_restart(tmp_path: Path) -> None:
    """Audio comes back bit-exact from memory, and from disk in a fresh cache (restart)."""
    audio = _audio(48000)
    first = PhraseCache(CacheConfig(dir=tmp_path))
    first.put(_key(1), audio, text="hello")
    assert np.array_equal(first.get(_key(1)).samples, audio.samples)
    assert first.stats()["hits"] == {"memory": 1, "disk": 0}
    second = PhraseCache(CacheConfig(dir=tmp_path))
    got = second.get(_key(1))
    assert got is not None and got.rate_hz == _RATE
    assert np.array_equal(got.samples, audio.samples)
    assert not got.samples.flags.writeable  # a caller cannot scribble over the cached copy
    assert second.get(_key(2)) is None
    stats = second.stats()
    assert (stats["hits"], stats["misses"]) == ({"memory": 0, "disk": 1}, 1)
    assert stats["hit_ratio"] == 0.5
    assert (tmp_path / _key(1)[:2] / f"{_key(1)}.pcm").is_file()


def test_put_copies_the_callers_array(tmp_path: Path) -> None:
    """Changing the array after put() must not change what the cache serves."""
    samples = np.ones(1000, dtype=np.int16)
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    cache.put(_key(1), Audio(samples, _RATE), text="x")
    samples[:] = 7
    assert cache.get(_key(1)).samples[0] == 1


def test_odd_texts_are_stored_bounded_and_never_break_put(tmp_path: Path) -> None:
    """A lone surrogate or a huge text (from a payload) never breaks put(); texts are bounded."""
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    cache.put(_key(1), _audio(100), text="bad \ud800 text")
    cache.put(_key(2), _audio(100), text="é" * 5000)
    listed = {e["key"]: e["text"] for e in PhraseCache(CacheConfig(dir=tmp_path)).entries()}
    assert listed[_key(1)] == "bad ? text"
    assert listed[_key(2)] == "é" * (store.MAX_TEXT_BYTES // 2)
    assert PhraseCache(CacheConfig(dir=tmp_path)).get(_key(2)) is not None


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_damaged_entry_detected_removed_logged_once(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A corrupted or truncated file is a miss (never wrong audio), removed, warned about once."""
    PhraseCache(CacheConfig(dir=tmp_path)).put(_key(1), _audio(30000), text="x")
    path = store.entry_path(tmp_path, _key(1))
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "truncate":
        data = data[: len(data) - 1000]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(os.urandom(len(data)))
    path.write_bytes(bytes(data))
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    with caplog.at_level(logging.WARNING, logger="edged.cache"):
        assert cache.get(_key(1)) is None
        assert cache.get(_key(1)) is None
    assert not path.exists()
    assert len([r for r in caplog.records if "damaged" in r.getMessage()]) == 1
    assert cache.stats()["corrupt"] == 1
    cache.put(_key(1), _audio(30000), text="x")  # the re-synthesized entry is good again
    assert PhraseCache(CacheConfig(dir=tmp_path)).get(_key(1)) is not None


def test_memory_tier_bounded_and_disk_serves_the_rest(tmp_path: Path) -> None:
    """The memory LRU stays within memory_mb; entries it dropped come from disk."""
    cache = PhraseCache(CacheConfig(dir=tmp_path, memory_mb=1))
    for i in range(6):
        cache.put(_key(i), _audio(150_000, i), text=str(i))  # 300 KB each
        assert cache.stats()["memory"]["bytes"] <= _MB
    for i in range(6):
        assert cache.get(_key(i)) is not None
    hits = cache.stats()["hits"]
    assert hits["disk"] >= 3 and hits["memory"] + hits["disk"] == 6
    off = PhraseCache(CacheConfig(dir=tmp_path, memory_mb=0))
    off.get(_key(0))
    off.get(_key(0))
    assert off.stats()["hits"] == {"memory": 0, "disk": 2}


def test_lru_eviction_keeps_folder_within_max_mb_and_spares_pinned(tmp_path: Path) -> None:
    """Dynamic entries go least-recently-used first; pinned ones never; the folder fits max_mb."""
    cache = PhraseCache(CacheConfig(dir=tmp_path, max_mb=1, memory_mb=0))
    for i in range(2):
        cache.put(_key(100 + i), _audio(100_000, 100 + i), text=f"pin {i}", pinned=True)
    for i in range(8):  # the 7th dynamic entry crosses 1 MiB: two are evicted
        cache.put(_key(i), _audio(50_000, i), text=f"dyn {i}")  # 100 KB each
        assert _folder_bytes(tmp_path) <= _MB
        if i == 3:
            assert cache.get(_key(0)) is not None  # used again: now the most recent of 0..3
    assert all(cache.get(_key(100 + i)) is not None for i in range(2))
    assert cache.get(_key(0)) is not None, "recently used entry was evicted"
    assert cache.get(_key(1)) is None, "least recently used entry survived"
    assert cache.get(_key(7)) is not None
    stats = cache.stats()
    assert stats["evicted"] > 0 and stats["pinned"]["entries"] == 2


def test_eviction_order_survives_restart_via_mtime(tmp_path: Path) -> None:
    """A new process evicts by the files' last-use times, not by creation order."""
    cache = PhraseCache(CacheConfig(dir=tmp_path, max_mb=1, memory_mb=0))
    for i in range(3):
        cache.put(_key(i), _audio(150_000, i), text=str(i))  # 300 KB each
    t0 = time.time() - 1000
    for i, age in ((0, 30), (1, 10), (2, 20)):  # entry 0 was used last, entry 1 first
        os.utime(store.entry_path(tmp_path, _key(i)), (t0 + age, t0 + age))
    fresh = PhraseCache(CacheConfig(dir=tmp_path, max_mb=1, memory_mb=0))
    fresh.put(_key(3), _audio(150_000, 3), text="3")
    assert not store.entry_path(tmp_path, _key(1)).exists()
    assert store.entry_path(tmp_path, _key(0)).exists()


def test_pinned_beyond_max_mb_are_kept_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Pinned phrases are never evicted, even when they alone exceed max_mb (said once)."""
    cache = PhraseCache(CacheConfig(dir=tmp_path, max_mb=1, memory_mb=0))
    with caplog.at_level(logging.WARNING, logger="edged.cache"):
        for i in range(4):
            cache.put(_key(i), _audio(200_000, i), text=str(i), pinned=True)
    assert all(store.entry_path(tmp_path, _key(i)).exists() for i in range(4))
    assert len([r for r in caplog.records if "more than cache.max_mb" in r.getMessage()]) == 1


def test_stale_temp_files_ignored_and_cleaned(tmp_path: Path) -> None:
    """A temp file left by a crash is never an entry; an old one is removed, a young one kept."""
    sub = tmp_path / "ab"
    sub.mkdir()
    old, young = sub / f".{'ab' * 8}.1.1.tmp", sub / f".{'ab' * 8}.2.2.tmp"
    old.write_bytes(b"half")
    young.write_bytes(b"half")
    os.utime(old, (time.time() - 7200,) * 2)
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    assert cache.stats()["entries"] == 0
    assert not old.exists() and young.exists()


def test_failed_write_leaves_no_entry_and_speech_goes_on(tmp_path: Path) -> None:
    """A disk that fills mid-write (RLIMIT_FSIZE: EFBIG even for root) leaves no partial file;
    the cache turns degraded and still serves the audio from memory."""
    script = textwrap.dedent("""
        import json, resource, signal, sys
        from pathlib import Path
        import numpy as np
        from edged.audio import Audio
        from edged.cache import PhraseCache
        from edged.config import CacheConfig
        cache = PhraseCache(CacheConfig(dir=Path(sys.argv[1])))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
        audio = Audio(np.arange(100000, dtype=np.int16), 16000)
        cache.put("ab" * 32, audio, text="big")
        cache.put("cd" * 32, audio, text="big too")
        got = cache.get("ab" * 32)
        print(json.dumps({"hit": got is not None and len(got.samples) == 100000,
                          "stats": cache.stats()}))
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True, timeout=_TIMEOUT_S, check=True)
    result = json.loads(proc.stdout)
    assert result["hit"] and result["stats"]["degraded"]
    assert "File too large" in result["stats"]["degraded_reason"]
    assert proc.stderr.count("degraded") == 1
    assert not list(tmp_path.rglob("*.pcm")) and not list(tmp_path.rglob("*.tmp"))


# ---------------------------------------------------------------- templates


def test_expand_phrases_templates_in_order_without_duplicates() -> None:
    """Every slot combination, in config order, duplicates dropped, numbers allowed as values."""
    phrases = expand_phrases((
        "Dinner is ready.",
        {"text": "The {room} {thing} is open.", "slots": {"room": ["kitchen", "bedroom"],
                                                          "thing": ["window", "door"]}},
        {"text": "Timer {n} done.", "slots": {"n": [1, 2]}},
        "Dinner is ready.",
        {"text": "Braces {{like this}} stay."},
    ), max_expansions=10)
    assert phrases == [
        "Dinner is ready.",
        "The kitchen window is open.", "The kitchen door is open.",
        "The bedroom window is open.", "The bedroom door is open.",
        "Timer 1 done.", "Timer 2 done.",
        "Braces {like this} stay.",
    ]


def test_expand_phrases_cap_names_the_key() -> None:
    """Past max_expansions the error names the entry that crossed it, without expanding it."""
    big = {"text": "{a}{b}{c}", "slots": {k: [str(i) for i in range(1000)] for k in "abc"}}
    with pytest.raises(ConfigError, match=r"^cache\.phrases\[1\]: expands to 1000000000 .*"
                                          r"more than cache\.max_expansions \(500\)"):
        expand_phrases(("hello", big), max_expansions=500)
    assert len(expand_phrases((_PHRASES[2],), max_expansions=6)) == 6
    with pytest.raises(ConfigError, match=r"cache\.phrases\[0\]"):
        expand_phrases((_PHRASES[2],), max_expansions=5)


@pytest.mark.parametrize(("item", "message"), [
    ("The {room} is cold", r"cache\.phrases\[0\]: has slot \{room\} but no values"),
    ({"text": "The {room}", "slots": {}}, r"cache\.phrases\[0\]\.slots: no values for slot"),
    ({"text": "Hi", "slots": {"room": ["a"]}}, r"cache\.phrases\[0\]\.slots\.room: slot is not"),
    ({"text": "The {room}", "slots": {"room": []}}, r"slots\.room: expected a non-empty list"),
    ({"text": "The {room}", "slots": {"room": [["x"]]}}, r"slots\.room\[0\]: expected a string"),
    ({"text": "The {room.x}", "slots": {"room": ["a"]}}, r"must be a plain name"),
    ({"text": "The {0}"}, r"must be a plain name"),
    ({"text": "The {room"}, r"bad braces"),
    ({"txt": "x"}, r"cache\.phrases\[0\]\.txt: unknown key"),
    ({"text": 3}, r"cache\.phrases\[0\]\.text: expected a string"),
    ("  ", r"cache\.phrases\[0\]: the phrase is empty"),
    (42, r"cache\.phrases\[0\]: expected a string or"),
])
def test_expand_phrases_rejects_bad_entries(item: object, message: str) -> None:
    """Every malformed phrase is a ConfigError naming its key, never a crash or silent skip."""
    with pytest.raises(ConfigError, match=message):
        expand_phrases((item,), max_expansions=100)


# ---------------------------------------------------------------- keys (tiny voice)


def test_key_changes_with_voice_and_settings(tiny_voice: PiperVoice, tiny_voice_path: Path,
                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another voice file, speed, speaker settings, pause length or normalizer can never hit
    stale audio."""
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    text = "The kitchen window is open."
    base = cache.key(tiny_voice, tiny_voice.settings(), text)
    cache.put(base, tiny_voice.synthesize(text), text=text)
    assert cache.key(tiny_voice, tiny_voice.settings(), text) == base
    assert cache.get(base) is not None
    variants = {
        "speed": cache.key(tiny_voice, tiny_voice.settings(speed=1.5), text),
        "noise": cache.key(tiny_voice, tiny_voice.settings(noise_scale=0.1), text),
        "noise_w": cache.key(tiny_voice, tiny_voice.settings(noise_w=0.1), text),
        "text": cache.key(tiny_voice, tiny_voice.settings(), text + " Now."),
    }
    other = tmp_path / "other"
    other.mkdir()
    (other / "tiny.onnx").write_bytes(tiny_voice_path.read_bytes())
    config = json.loads(Path(f"{tiny_voice_path}.json").read_text())
    config["dataset"] = "retrained"  # any byte of the voice config changes the fingerprint
    (other / "tiny.onnx.json").write_text(json.dumps(config))
    changed = PiperVoice.load(other / "tiny.onnx")
    variants["voice"] = cache.key(changed, changed.settings(), text)
    paused = PiperVoice.load(tiny_voice_path, sentence_pause_ms=500)
    variants["pause"] = cache.key(paused, paused.settings(), text)
    multi = PiperVoice.load(make_tiny_voice(tmp_path / "multi" / "tiny.onnx", {"ann": 0, "bob": 1}))
    variants["speaker ann"] = cache.key(multi, multi.settings(speaker="ann"), text)
    variants["speaker bob"] = cache.key(multi, multi.settings(speaker="bob"), text)
    # A new normalizer release (its version bumped) reads text differently: stand in for one.
    monkeypatch.setattr(keys, "NORMALIZER_VERSION", keys.NORMALIZER_VERSION + "-next")
    variants["normalizer"] = keys.make_key(tiny_voice, tiny_voice.settings(), text)
    assert base not in variants.values() and len(set(variants.values())) == len(variants)
    assert all(cache.get(k) is None for k in variants.values())


def test_key_is_stable_across_processes(tiny_voice: PiperVoice, tiny_voice_path: Path,
                                        tmp_path: Path) -> None:
    """The same request gives the same key in another process (no hash randomisation leaks)."""
    script = ("import sys; from pathlib import Path; from edged.voice import PiperVoice;"
              "from edged.cache import PhraseCache; from edged.config import CacheConfig;"
              "v = PiperVoice.load(sys.argv[1]);"
              "print(PhraseCache(CacheConfig(dir=Path(sys.argv[2]))).key(v, v.settings(), 'Hi.'))")
    out = subprocess.run([sys.executable, "-c", script, str(tiny_voice_path), str(tmp_path)],
                         capture_output=True, text=True, timeout=_TIMEOUT_S, check=True).stdout
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    assert out.strip() == cache.key(tiny_voice, tiny_voice.settings(), "Hi.")


# ---------------------------------------------------------------- warm (tiny voice)


def _warm(cache: PhraseCache, voice: PiperVoice, phrases: list[str], **kwargs: Any) -> WarmReport:
    """What `edged cache warm` does: pin the phrases, make the missing ones with the voice."""
    settings = voice.settings()
    return warm(cache, cache.pin_keys(voice, settings, phrases),
                lambda text: voice.synthesize(text, settings), **kwargs)


def test_warm_twice_does_nothing_the_second_time(tiny_voice: PiperVoice, tmp_path: Path) -> None:
    """The second warm finds every pinned phrase on disk and rewrites nothing."""
    phrases = expand_phrases(tuple(_PHRASES), 100)
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    calls: list[tuple[int, int]] = []
    first = _warm(cache, tiny_voice, phrases,
                   progress=lambda d, t, _text: calls.append((d, t)))
    assert (first.total, first.synthesized, first.present, first.failed) == (8, 8, 0, ())
    assert calls == [(i, 8) for i in range(1, 9)]
    files = {p: p.stat().st_mtime_ns for p in tmp_path.glob("??/*.pcm")}
    again = _warm(PhraseCache(CacheConfig(dir=tmp_path)), tiny_voice, phrases)
    assert (again.synthesized, again.present) == (0, 8)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.glob("??/*.pcm")} == files
    stats = PhraseCache(CacheConfig(dir=tmp_path)).stats()
    assert (stats["pinned"]["entries"], stats["dynamic"]["entries"]) == (8, 0)


def test_warm_replaces_damaged_pinned_entry(tiny_voice: PiperVoice, tmp_path: Path) -> None:
    """warm re-synthesizes a pinned phrase whose file was truncated."""
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    _warm(cache, tiny_voice, ["Good morning.", "Good night."])
    victim = next(tmp_path.glob("??/*.pcm"))
    victim.write_bytes(victim.read_bytes()[:100])
    report = _warm(PhraseCache(CacheConfig(dir=tmp_path)), tiny_voice,
                   ["Good morning.", "Good night."])
    assert (report.synthesized, report.present) == (1, 1)
    store.read_entry(victim)  # valid again


def test_warm_replaces_the_pin_list(tiny_voice: PiperVoice, tmp_path: Path) -> None:
    """A phrase dropped from cache.phrases turns dynamic (evictable, purgeable), not pinned."""
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    _warm(cache, tiny_voice, ["Good morning.", "Good night."])
    _warm(cache, tiny_voice, ["Good morning."])
    stats = cache.stats()
    assert (stats["pinned"]["entries"], stats["dynamic"]["entries"]) == (1, 1)
    assert cache.purge(dynamic_only=True)[0] == 1
    key = cache.key(tiny_voice, tiny_voice.settings(), "Good morning.")
    assert PhraseCache(CacheConfig(dir=tmp_path)).get(key) is not None


# ---------------------------------------------------------------- CLI and processes


def test_cli_warm_then_hit_in_a_new_process(tiny_voice: PiperVoice, tiny_voice_path: Path,
                                            tmp_path: Path) -> None:
    """`edged cache warm` in one process; a later process gets disk hits for every phrase."""
    config = _write_config(tmp_path, tiny_voice_path)
    proc = _edged("cache", "warm", "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert "8 pinned phrase(s) for voice tiny: 8 synthesized, 0 already cached" in proc.stdout
    assert proc.stderr == ""  # not a terminal: no progress line
    again = _edged("cache", "warm", "--config", str(config))
    assert "0 synthesized, 8 already cached" in again.stdout
    cache = PhraseCache(CacheConfig(dir=tmp_path / "cache"))
    for text in expand_phrases(tuple(_PHRASES), 100):
        got = cache.get(cache.key(tiny_voice, tiny_voice.settings(), text))
        assert got is not None and np.array_equal(got.samples, tiny_voice.synthesize(text).samples)
    assert cache.stats()["hits"]["disk"] == 8


def test_cli_warm_shows_progress_on_a_terminal(tiny_voice_path: Path, tmp_path: Path) -> None:
    """On a terminal, warm rewrites one progress line per phrase ([i/n] text)."""
    config = _write_config(tmp_path, tiny_voice_path)
    master, slave = pty.openpty()
    proc = subprocess.Popen([*EDGED, "cache", "warm", "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + _TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            shown += chunk
        elif proc.poll() is not None:
            break
    proc.wait(_TIMEOUT_S)
    os.close(master)
    assert proc.returncode == 0
    assert b"\r\x1b[K[1/8] Good morning." in shown and b"[8/8] The attic window is open." in shown


def test_concurrent_warm_from_two_processes(tiny_voice_path: Path, tmp_path: Path) -> None:
    """Two `edged cache warm` at once on one folder: both succeed, every entry is valid."""
    many = [{"text": "Sensor {n} in the {room} reports.",
             "slots": {"n": list(range(10)), "room": _ROOMS}}]
    config = _write_config(tmp_path, tiny_voice_path, many)
    procs = [subprocess.Popen([*EDGED, "cache", "warm", "--config", str(config)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = [p.communicate(timeout=_TIMEOUT_S) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    files = list((tmp_path / "cache").glob("??/*.pcm"))
    assert len(files) == 60
    for path in files:
        store.read_entry(path)  # raises CorruptEntry on a torn or mixed file
    assert not list((tmp_path / "cache").rglob("*.tmp"))
    assert folder.read_pins(tmp_path / "cache") == {p.stem for p in files}


def test_cli_stats_list_and_purge_show_and_empty_the_cache(tiny_voice: PiperVoice, tiny_voice_path: Path,
                                                           tmp_path: Path) -> None:
    """stats counts tiers and shows the recorded hit ratio; list shows texts; purge empties."""
    config = _write_config(tmp_path, tiny_voice_path)
    assert _edged("cache", "warm", "--config", str(config)).returncode == 0
    daemon_like = PhraseCache(CacheConfig(dir=tmp_path / "cache"))
    daemon_like.put(_key(1), _audio(16000), text="Someone is at the door.")
    assert daemon_like.get(daemon_like.key(tiny_voice, tiny_voice.settings(), "Good morning."))
    assert daemon_like.get(_key(2)) is None
    daemon_like.close()
    stats = json.loads(_edged("cache", "stats", "--json", "--config", str(config)).stdout)
    assert (stats["entries"], stats["pinned"]["entries"], stats["dynamic"]["entries"]) == (9, 8, 1)
    assert stats["degraded"] is False
    assert (stats["recorded"]["disk_hits"], stats["recorded"]["misses"]) == (1, 1)
    text = _edged("cache", "stats", "--config", str(config)).stdout
    assert "50.0 % of 2 lookups" in text and "pinned     8," in text
    listing = _edged("cache", "list", "--config", str(config)).stdout
    assert "The garage window is open." in listing and "dynamic" in listing
    assert "9 entries" in listing
    purged = _edged("cache", "purge", "--dynamic", "--config", str(config))
    assert "removed 1 dynamic entries" in purged.stdout
    assert "removed 8 entries" in _edged("cache", "purge", "--config", str(config)).stdout
    assert not list((tmp_path / "cache").glob("??/*.pcm"))


def test_cli_bad_template_is_a_config_error(tiny_voice_path: Path, tmp_path: Path) -> None:
    """A template past max_expansions stops `cache warm` with one line naming the key, exit 2."""
    config = _write_config(tmp_path, tiny_voice_path, max_expansions=5)
    proc = _edged("cache", "warm", "--config", str(config))
    assert proc.returncode == 2
    assert proc.stderr.startswith("edged: cache.phrases[2]: expands to 6 phrase(s)")
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------- degraded mode


def test_unwritable_folder_speech_still_works(
    tiny_voice: PiperVoice, tiny_voice_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """cache.dir is a file (unwritable even for root): one warning, synthesis and memory tier
    work, stats say degraded; `cache warm` still speaks every phrase, reports it stored none."""
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="edged.cache"):
        cache = PhraseCache(CacheConfig(dir=blocker))
        settings = tiny_voice.settings()
        for text in ("Good morning.", "Good night."):
            key = cache.key(tiny_voice, settings, text)
            assert cache.get(key) is None
            audio = tiny_voice.synthesize(text)
            assert len(audio.samples) > 0
            cache.put(key, audio, text=text)
            assert np.array_equal(cache.get(key).samples, audio.samples)
    assert len([r for r in caplog.records if "degraded" in r.getMessage()]) == 1
    stats = cache.stats()
    assert stats["degraded"] and str(blocker) in stats["degraded_reason"]
    proc = _edged("cache", "warm", "--config", str(_write_config(tmp_path, tiny_voice_path)))
    assert proc.returncode == 1
    assert "8 synthesized" in proc.stdout and "cache degraded, nothing was stored" in proc.stderr
    assert "DEGRADED" in _edged("cache", "stats", "--config", str(tmp_path / "edged.yaml")).stdout


def test_folder_failing_after_start_degrades_once(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Writes failing after start (here ENOTDIR) degrade the cache once; memory still serves."""
    cache = PhraseCache(CacheConfig(dir=tmp_path))
    for prefix in ("01", "02"):
        (tmp_path / prefix).write_text("in the way")
    with caplog.at_level(logging.WARNING, logger="edged.cache"):
        cache.put("01" * 32, _audio(1000), text="a")
        cache.put("02" * 32, _audio(1000), text="b")
    assert cache.get("01" * 32) is not None and cache.get("02" * 32) is not None
    assert len([r for r in caplog.records if "degraded" in r.getMessage()]) == 1
    assert cache.stats()["degraded"]


# ---------------------------------------------------------------- the shipped config


@pytest.mark.voice
def test_warm_shipped_config_with_real_voice(tmp_path: Path,
                                             prepared_voices: PreparedVoices) -> None:
    """`edged cache warm` on config/edged.yaml's sample phrases works with the real voice."""
    prepared_voices.seed(tmp_path / "cache")
    shipped = ROOT / "config" / "edged.yaml"
    data = yaml.safe_load(shipped.read_text())
    data["cache"]["dir"] = str(tmp_path / "cache")  # never write into the checkout
    dirs = data.get("voice", {}).get("dirs")
    if dirs:
        data["voice"]["dirs"] = [str((shipped.parent / d).resolve()) for d in dirs]
    config = tmp_path / "edged.yaml"
    config.write_text(yaml.safe_dump(data))
    expected = len(expand_phrases(tuple(data["cache"]["phrases"]), 10_000))
    assert expected >= 5 and any(isinstance(p, dict) for p in data["cache"]["phrases"])
    proc = _edged("cache", "warm", "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert f"{expected} pinned phrase(s)" in proc.stdout
    assert f"{expected} synthesized" in proc.stdout
    again = _edged("cache", "warm", "--config", str(config))
    assert f"0 synthesized, {expected} already cached" in again.stdout
