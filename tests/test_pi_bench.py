"""bench/pi.sh and bench.pi_table, what a Pi user runs to send figures back, and the estimate
table of docs/pi.md: the script measured for real on this machine (the real default voice, edged's
own synthesis workers), the estimate's arithmetic checked against changed inputs, and the docs'
table checked to be the one the committed figures give. (How fast a Pi is, nobody can test here.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.paths import ROOT

PI_SH = ROOT / "bench" / "pi.sh"
SYNTH_JSON = ROOT / "bench" / "results" / "synth.json"
_DEVICES = ("Pi 5", "Pi 4 B", "Pi 3 B+", "Zero 2 W")


def estimate(synth: Path, *extra: str) -> str:
    out = subprocess.run([sys.executable, "-m", "bench.pi_table", "estimate", "--synth",
                          str(synth), *extra], capture_output=True, text=True, timeout=60,
                         check=True, cwd=ROOT)
    return out.stdout


def rows(markdown: str) -> dict[str, list[str]]:
    """Device name -> its cells, from a markdown table."""
    found = {}
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in _DEVICES:
            found[cells[0]] = cells
    return found


def first_audio(cells: list[str]) -> float:
    match = re.match(r"([\d.]+) / ", cells[5])
    assert match, cells
    return float(match.group(1))


@pytest.mark.long  # runs the whole Pi bench script: 20 s
@pytest.mark.timeout(300)
def test_pi_sh_measures_the_table_rows_on_this_machine(tmp_path: Path) -> None:
    """bench/pi.sh (edged only, three corpus lines) prepares the default voice, measures edged on
    one pinned thread and on all cores, prints its own row above the estimates and writes the
    JSON a user sends back, with the machine and device blocks."""
    out = tmp_path / "pi.json"
    run = subprocess.run([str(PI_SH), "--no-piper", "--lines", "3", "--rounds", "1",
                          "--out", str(out)], capture_output=True, text=True, timeout=280,
                         env={**os.environ, "PY": sys.executable})
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["lines"] == 3 and set(data["runs"]) == {"edged-1t", "edged-2t"}
    measured = data["measured"]
    for key in ("rtf_1t", "rtf_all", "first_audio_s", "first_audio_p95_s"):
        assert measured[key] > 0, key
    assert data["runs"]["edged-1t"]["config"]["taskset"] == "0"  # the 1-thread row is pinned
    assert measured["piper_rtf_1t"] is None  # --no-piper: no peer row, and none invented
    assert data["machine"]["arch"] and "model" in data["device"]
    printed = run.stdout
    assert measured["device"] in printed and all(d in printed for d in _DEVICES)
    assert f"wrote {out}" in printed


def test_pi_sh_without_an_interpreter_says_so(tmp_path: Path) -> None:
    """Run before `make install`, pi.sh stops with one line naming the fix, exit 2."""
    run = subprocess.run([str(PI_SH)], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PY": str(tmp_path / "no-python")})
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "make install" in run.stderr


def test_docs_table_is_the_estimate_of_the_committed_figures() -> None:
    """docs/pi.md shows exactly the table that bench/results/synth.json gives (rerun
    `python -m bench.pi_table estimate --markdown` after a new synth run and paste it)."""
    table = estimate(SYNTH_JSON, "--markdown").strip()
    assert table in (ROOT / "docs" / "pi.md").read_text(encoding="utf-8")
    assert set(rows(table)) == set(_DEVICES)


def _changed(tmp_path: Path, change: dict[str, tuple[str, float]]) -> Path:
    data: dict[str, Any] = json.loads(SYNTH_JSON.read_text())
    for run, (key, factor) in change.items():
        data["runs"][run][key] *= factor
    path = tmp_path / "synth.json"
    path.write_text(json.dumps(data))
    return path


def test_estimate_follows_the_figures_measured_here(tmp_path: Path) -> None:
    """A piper-tts twice as slow here means a Pi is half as many times slower than this machine,
    so edged's estimated first audio halves on every device; edged twice as slow on one thread
    (both precisions) doubles the 1-thread RTF and leaves the all-cores one alone."""
    base = rows(estimate(SYNTH_JSON, "--markdown"))
    slow_peer = rows(estimate(_changed(tmp_path, {"piper-1t": ("rtf", 2.0)}), "--markdown"))
    slow_edged = rows(estimate(_changed(tmp_path, {"edged-1t": ("rtf", 2.0),
                                                   "edged-1t-fp32": ("rtf", 2.0)}), "--markdown"))
    for device in _DEVICES:
        assert first_audio(slow_peer[device]) == pytest.approx(first_audio(base[device]) / 2,
                                                               abs=0.01)
        assert float(slow_edged[device][3]) == pytest.approx(2 * float(base[device][3]), abs=0.015)
        assert slow_edged[device][4] == base[device][4]
