"""The memory budget: two real voices with a budget that fits one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edged.config import parse_config
from edged.voice import LoadedVoices
from tests.harness.internals import unloads
from tests.harness.voices import PreparedVoices


@pytest.fixture
def two_voices(tmp_path: Path, default_voice_path: Path, prepared_voices: PreparedVoices) -> Path:
    """Two names for the real default voice's files (hard links: no 63 MB copies), each
    prepared already in `cache/` (these tests are about the budget, not about preparing)."""
    for name in ("first", "second"):
        for suffix in (".onnx", ".onnx.json"):
            target = tmp_path / f"{name}{suffix}"
            source = Path(f"{default_voice_path}{suffix.removeprefix('.onnx')}")
            try:
                os.link(source, target)
            except OSError:  # another file system: copy
                target.write_bytes(source.read_bytes())
        prepared_voices.seed(tmp_path / "cache", as_voice=tmp_path / f"{name}.onnx")
    return tmp_path


_SCENARIO = """
import json, logging, sys
from pathlib import Path
from edged.config import parse_config
from edged.memory import rss_mb
from edged.voice import LoadedVoices
from tests.harness.internals import unloads
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
unloaded = unloads().__enter__()
folder = Path(sys.argv[1])
config = parse_config({"voice": {"name": "first", "dirs": [str(folder)]},
                       "cache": {"dir": str(folder / "cache")}}, folder)
pool = LoadedVoices(config, budget_mb=0)
one_voice = pool.cost_mb("first")
pool._budget_mb = rss_mb() + one_voice * 1.5   # fits one voice, not two
pool.get("first")
with_first = rss_mb()
second = pool.get("second")
print(json.dumps({"loaded": pool.loaded, "unloaded": [m[1] for m in unloaded.matches],
                  "one_voice": one_voice,
                  "with_first": with_first, "after": rss_mb(),
                  "speaks": second.synthesize("Still speaking.").duration_s}))
"""


@pytest.mark.voice
def test_lru_voice_unloaded_when_second_needed(two_voices: Path) -> None:
    """Budget fits one voice: asking for the second unloads the first (log, state, RSS).

    Run in a fresh process, as the daemon is: RSS figures in this test process depend on
    what earlier tests left in its heap."""
    r = subprocess.run([sys.executable, "-c", _SCENARIO, str(two_voices)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["loaded"] == ["second"] and result["unloaded"] == ["first"], result
    assert "Unloaded voice first (least recently used) to load second" in r.stderr
    # Both loaded would be about with_first + one voice; unloading keeps us well below that.
    assert result["after"] < result["with_first"] + result["one_voice"] * 0.6, result
    assert result["speaks"] > 0.3


def test_recently_used_voice_stays(tmp_path: Path, tiny_voice_path: Path) -> None:
    """LRU order: the voice used last is kept; the one used before it goes first."""
    from tests.harness.tiny_voice import make_tiny_voice

    for name in ("a", "b", "c"):
        make_tiny_voice(tmp_path / f"{name}.onnx")
    config = parse_config({"voice": {"name": "a", "dirs": [str(tmp_path)]}}, tmp_path)
    pool = LoadedVoices(config, budget_mb=100_000)
    pool.get("a"), pool.get("b"), pool.get("a")
    assert pool.loaded == ["b", "a"]
    pool._budget_mb = 0.0  # nothing fits: every other voice is unloaded, oldest first
    with unloads() as unloaded:
        pool.get("c")
    assert [m[1] for m in unloaded.matches] == ["b", "a"] and pool.loaded == ["c"]


_RECLAIM = """
import json, sys
from pathlib import Path
from edged.config import parse_config
from edged.memory import rss_mb
from edged.voice import LoadedVoices
folder = Path(sys.argv[1])
config = parse_config({"voice": {"name": "first", "dirs": [str(folder)]},
                       "cache": {"dir": str(folder / "cache")}}, folder)
pool = LoadedVoices(config, budget_mb=100_000)
voice = pool.get("first")
voice.synthesize(" ".join(["The washing machine has finished, and the dryer is next."] * 6))
peak = rss_mb()
pool._budget_mb = peak / 0.9            # over 3/4 of the budget, under the whole of it
kept = pool.reclaim(share=1.0), rss_mb()
given = pool.reclaim(), rss_mb()
print(json.dumps({"peak": peak, "kept": kept, "given": given}))
"""


@pytest.mark.voice
def test_arenas_are_given_back_only_above_the_share_of_the_budget_asked(two_voices: Path) -> None:
    """After each stream the daemon asks for share 1 (over the budget only), when idle for 3/4:
    a process at 90 % of its budget keeps its arenas for the first and gives them back for the
    second. A fresh process, as the daemon is: RSS here depends on earlier tests."""
    r = subprocess.run([sys.executable, "-c", _RECLAIM, str(two_voices)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["kept"][0] is False and result["kept"][1] >= result["peak"] - 2, result
    assert result["given"][0] is True and result["given"][1] < result["kept"][1] - 5, result
