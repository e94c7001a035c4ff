"""The soak (issue 18; tests/harness/soak.py): announcements of every kind through MQTT, the group
topic, HTTP and Wyoming while the broker and the daemon are SIGKILLed at random moments. Every
id ends with exactly one final outcome, none is spoken twice, memory stays flat and no open
file or thread is left behind. Short here (>= 500 announcements, 2 kills each); 30 minutes with
10,000 and 5 kills each in `make test-long` (and bench/soak.py, which plots it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.soak import (
    LONG_PLAN,
    QUIET_FDS_SLACK,
    QUIET_THREADS_SLACK,
    SHORT_PLAN,
    Soak,
)

_RSS_NOISE_MB = 8.0
"""Allowed RSS growth over the window: allocator noise (arenas, caches warming), not a leak."""


def _assert_books(result: dict) -> None:
    print(json.dumps({k: v for k, v in result.items() if k != "problems"}, indent=1))
    assert result["sent"] == result["plan"]["count"]
    assert result["problem_count"] == 0, result["problems"]
    assert result["finished_twice"] == [] and result["spoken_twice_in_log"] == []
    assert sum(result["outcomes"].values()) == result["sent"]
    # The one way the mix fails an announcement by design: a critical one interrupts it.
    assert set(result["why_failed"]) <= {"interrupted by critical request <id>"}, result
    assert result["wyoming"].get("failed", 0) == 0 and result["wyoming"].get("ok", 0) > 0
    memory = result["memory"]
    assert "rss_growth_mb" in memory, f"too few samples of the last daemon process: {memory}"
    assert memory["rss_growth_mb"] <= _RSS_NOISE_MB, memory
    # Once the load stopped, no more files or threads open than early in the window.
    assert result["quiet"]["fds"] <= memory["fds_early_min"] + QUIET_FDS_SLACK, (
        result["quiet"], memory)
    assert result["quiet"]["threads"] <= memory["threads_early_min"] + QUIET_THREADS_SLACK, (
        result["quiet"], memory)
    assert [k["what"] for k in result["kills"]].count("broker") == result["plan"]["broker_kills"]
    assert [k["what"] for k in result["kills"]].count("daemon") == result["plan"]["daemon_kills"]


# A soak: a minute of the suite's time (exactly-once across kills: test_daemon_faults too).
@pytest.mark.long
@pytest.mark.timeout(300)
def test_short_soak_500_announcements_two_kills_each(tmp_path: Path,
                                                     tiny_voice_path: Path) -> None:
    """500 announcements in a minute (cached, uncached, critical, group, HTTP; Wyoming beside),
    the broker and the daemon each SIGKILLed twice: the books balance."""
    _assert_books(Soak(SHORT_PLAN, tmp_path, tiny_voice_path).run())


@pytest.mark.long
@pytest.mark.timeout(3600)
def test_soak_10000_announcements_over_30_minutes(tmp_path: Path,
                                                   tiny_voice_path: Path) -> None:
    """10,000 announcements over 30 minutes, the broker and the daemon each SIGKILLed 5 times
    (the daemon within the first 10 minutes, so the last 20 show one process's memory);
    bench/soak.py runs the same plan and plots it."""
    _assert_books(Soak(LONG_PLAN, tmp_path, tiny_voice_path).run())
