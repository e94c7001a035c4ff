"""The memory budget: two real voices with a budget that fits one."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from edged.config import parse_config
from edged.memory import release_freed_memory, rss_mb
from edged.voice_pool import VoicePool


@pytest.fixture
def two_voices(tmp_path: Path, default_voice_path: Path) -> Path:
    """Two names for the real default voice's files (hard links: no 63 MB copies)."""
    for name in ("first", "second"):
        for suffix in (".onnx", ".onnx.json"):
            target = tmp_path / f"{name}{suffix}"
            source = Path(f"{default_voice_path}{suffix.removeprefix('.onnx')}")
            try:
                os.link(source, target)
            except OSError:  # another file system: copy
                target.write_bytes(source.read_bytes())
    return tmp_path


@pytest.mark.voice
def test_lru_voice_unloaded_when_second_needed(two_voices: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Budget fits one voice: asking for the second unloads the first (logs, state, RSS)."""
    config = parse_config({"voice": {"name": "first", "dirs": [str(two_voices)]}}, two_voices)
    probe = VoicePool(config, budget_mb=100_000)
    base = rss_mb()
    probe.get("first")
    one_voice = rss_mb() - base
    del probe
    release_freed_memory()

    pool = VoicePool(config, budget_mb=rss_mb() + one_voice * 1.5)
    pool.get("first")
    with_first = rss_mb()
    with caplog.at_level(logging.WARNING, logger="edged.voice_pool"):
        second = pool.get("second")
    assert pool.loaded == ["second"]
    assert pool.unloaded == ["first"]
    assert any("Unloaded voice first" in r.message for r in caplog.records)
    # Both loaded would be about with_first + one_voice; unloading keeps us well below that.
    assert rss_mb() < with_first + one_voice * 0.6
    assert second.synthesize("Still speaking.").duration_s > 0.3


def test_recently_used_voice_stays(tmp_path: Path, tiny_voice_path: Path) -> None:
    """LRU order: the voice used last is kept; the one used before it goes first."""
    from make_tiny_voice import make_tiny_voice

    for name in ("a", "b", "c"):
        make_tiny_voice(tmp_path / f"{name}.onnx")
    config = parse_config({"voice": {"name": "a", "dirs": [str(tmp_path)]}}, tmp_path)
    pool = VoicePool(config, budget_mb=100_000)
    pool.get("a"), pool.get("b"), pool.get("a")
    assert pool.loaded == ["b", "a"]
    pool._budget_mb = 0.0  # nothing fits: every other voice is unloaded, oldest first
    pool.get("c")
    assert pool.unloaded == ["b", "a"] and pool.loaded == ["c"]
