"""Preparing a voice shows its progress (issue 26 §1): each stage of the child preparer logged
by the parent with its time, in order, and named in systemd's STATUS= line as it starts, sent
to a real NOTIFY_SOCKET (a datagram socket standing in for systemd) by the daemon's Notifier.
The tiny VITS-shaped voice is prepared for real, in the child process, in well under a second."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from edged.notify import Notifier
from edged.voice.catalog.hashes import file_sha256
from edged.voice.piper.prepared import ensure_prepared
from edged.voice.prepare import progress
from edged.voice.prepare.progress import run_followed
from tests.harness.notify import NotifyListener
from tests.harness.paths import ROOT
from tests.harness.pidfds import all_end, pid_written
from tests.harness.tiny_voice import make_tiny_vits_voice

_LINE = re.compile(r"Preparing voice (\S+): stage (\d)/(\d) \((\w+)\) took (\d+\.\d) s")


@pytest.fixture
def notify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NotifyListener]:
    listener = NotifyListener(tmp_path / "notify.sock")
    monkeypatch.setenv("NOTIFY_SOCKET", str(listener.path))
    yield listener
    listener.close()


def _stages_logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, ...]]:
    found = [_LINE.fullmatch(r.getMessage()) for r in caplog.records]
    return [m.groups() for m in found if m]


@pytest.mark.parametrize(("precision", "stages"), [
    ("float32", ["split", "optimize", "probe", "write"]),
    ("int8", ["quantize", "split", "optimize", "probe", "write"]),
])
def test_each_stage_is_logged_with_its_time_and_named_in_status(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, notify: NotifyListener,
        precision: str, stages: list[str]) -> None:
    """One log line per stage, in order, numbered N/M with its time; the STATUS= line names
    each stage as it starts (after the first "preparing voice" line that extends the start
    timeout)."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    caplog.set_level(logging.INFO)
    with Notifier() as notifier:
        assert ensure_prepared(onnx_path, file_sha256(onnx_path), tmp_path / "cache", precision,
                               status=notifier.status) is not None
    total = str(len(stages))
    assert [line[:4] for line in _stages_logged(caplog)] == [
        ("vits.onnx", str(n), total, name) for n, name in enumerate(stages, 1)]
    last = f"Preparing voice vits.onnx: stage {total}/{total} (write)"
    end = notify.wait(lambda d: d.fields.get("STATUS") == last)
    statuses = [d.fields["STATUS"] for d in notify.got[:end + 1] if "STATUS" in d.fields]
    assert statuses[0].startswith("preparing voice vits.onnx (once per model")
    assert statuses[1:] == [f"Preparing voice vits.onnx: stage {n}/{total} ({name})"
                            for n, name in enumerate(stages, 1)]


def test_a_graph_prepared_whole_skips_the_probe(tmp_path: Path, tiny_voice_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """A voice that cannot be split has no windows to measure: its stages are 1, 2 and 4 of 4
    (the numbers stay those of the plan, so a log reader sees what was skipped)."""
    onnx_path = tmp_path / "v" / "tiny.onnx"
    onnx_path.parent.mkdir()
    onnx_path.write_bytes(tiny_voice_path.read_bytes())
    Path(f"{onnx_path}.json").write_bytes(Path(f"{tiny_voice_path}.json").read_bytes())
    caplog.set_level(logging.INFO)
    assert ensure_prepared(onnx_path, file_sha256(onnx_path), tmp_path / "cache") is not None
    assert [(n, name) for _, n, _, name, _ in _stages_logged(caplog)] == [
        ("1", "split"), ("2", "optimize"), ("4", "write")]


def test_a_preparer_past_its_time_is_killed() -> None:
    """The parent follows the child's stages but still bounds it: past the timeout the child
    is killed and TimeoutExpired raised (ensure_prepared then loads the voice directly). The
    child waits for a signal forever: returning at all means it was killed."""
    child = "import signal; print('edged-prepare not json', flush=True); signal.pause()"
    with pytest.raises(subprocess.TimeoutExpired):
        run_followed([sys.executable, "-c", child], "slow.onnx", None, timeout_s=1.0)


def _paused_child(pid_file: Path, tied: bool) -> list[str]:
    """A preparer stand-in: (with `tied`, die_with_parent first,) writes its pid into the named
    pipe `pid_file`, then waits for a signal forever."""
    code = ("import os, signal, sys; from edged.voice.prepare.progress import die_with_parent; "
            f"{'die_with_parent(); ' if tied else ''}"
            f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); signal.pause()")
    return [sys.executable, "-c", code]


def test_a_stop_that_comes_while_the_timer_starts_leaves_no_child(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`edged run` turns SIGTERM into SystemExit at whatever line the main thread is on. Seen on
    CI: it came while the timeout's thread started (Timer.start waits for it), before the
    child was guarded, and the preparer outlived the daemon. Here the stop is raised there, once
    the real child runs."""
    pid_file = tmp_path / "pid"
    os.mkfifo(pid_file)
    watched: list[tuple[int, int]] = []

    class StoppedWhileStarting(threading.Timer):
        def start(self) -> None:
            watched.append(pid_written(pid_file))
            raise SystemExit(0)

    # A stand-in for the signal, not for a part: no real SIGTERM can be timed to land inside
    # Timer.start, so the stop is raised there; the child, its pipe and the kill are real.
    monkeypatch.setattr(progress.threading, "Timer", StoppedWhileStarting)
    with pytest.raises(SystemExit):
        run_followed(_paused_child(pid_file, tied=False), "stopped.onnx", None, timeout_s=60)
    assert watched, "the child never started"
    pid, pidfd = watched[0]
    try:
        assert all_end([pidfd], 10.0), "the child outlived the stop"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # the failing case must not leave it running


def test_a_preparer_dies_with_a_parent_that_is_killed(tmp_path: Path) -> None:
    """SIGKILL (the OOM killer, `kill -9`) gives the daemon no chance to stop its preparer: the
    kernel does, as the child asked it to (die_with_parent). A real parent process running
    run_followed, killed; without it the child would wait forever."""
    pid_file = tmp_path / "pid"
    os.mkfifo(pid_file)
    parent_code = ("import sys; from edged.voice.prepare.progress import run_followed; "
                   f"run_followed({_paused_child(pid_file, tied=True)!r}, 'x.onnx', None, 600)")
    parent = subprocess.Popen([sys.executable, "-c", parent_code], cwd=ROOT)
    orphan, child = pid_written(pid_file)
    parent.kill()
    parent.wait()
    try:
        assert all_end([child], 10.0), "the preparer outlived its killed parent"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(orphan, signal.SIGKILL)  # the failing case must not leave it running
