"""Preparing a voice, stage by stage, told to the daemon: the child writes one line on standard
output as each stage starts and ends; the parent (`piper/prepared.ensure_prepared`) logs each
stage with its time and puts the stage in systemd's STATUS= line.

    child:  edged-prepare {"n": 2, "of": 4, "stage": "optimize"}
            edged-prepare {"n": 2, "of": 4, "stage": "optimize", "s": 3.81}
    parent: STATUS=Preparing voice en_US-joe-medium.onnx: stage 2/4 (optimize)
            log: Preparing voice en_US-joe-medium.onnx: stage 2/4 (optimize) took 3.8 s

A first start prepares for seconds here and minutes on a small board; without this the log and
`systemctl status` said nothing between "Preparing voice" and "Prepared voice". Only the
parent talks to systemd (NotifyAccess=main: a child's datagrams would be dropped).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any, Final

from ...lifetime import signal_when_parent_dies

_LOGGER = logging.getLogger(__name__)
_MARK: Final = "edged-prepare "
_PARENT_ENV: Final = "EDGED_PREPARE_PARENT"
_STAGES: Final = ("quantize", "split", "optimize", "probe", "write")
"""Every stage there may be, in order: quantize only for voice.precision int8; probe only for
a voice that was split (a whole graph has no windows to measure: its number is skipped)."""


def stages_for(precision: str) -> tuple[str, ...]:
    return _STAGES if precision == "int8" else _STAGES[1:]


class Progress:
    """The child's side: `begin(name)` ends the stage before (its time on the line) and starts
    `name`; `end()` ends the last one. `out=None`: told to nobody (prepare() called in-process)."""

    def __init__(self, stages: Sequence[str], out: IO[str] | None = None) -> None:
        self._stages = list(stages)
        self._out = out
        self._current: tuple[str, float] | None = None

    def begin(self, name: str) -> None:
        self.end()
        self._current = (name, time.monotonic())
        self._say(name)

    def end(self) -> None:
        if self._current is not None:
            name, start = self._current
            self._current = None
            self._say(name, round(time.monotonic() - start, 3))

    def _say(self, name: str, seconds: float | None = None) -> None:
        if self._out is None:
            return
        event: dict[str, object] = {"n": self._stages.index(name) + 1, "of": len(self._stages),
                                    "stage": name}
        if seconds is not None:
            event["s"] = seconds
        self._out.write(_MARK + json.dumps(event) + "\n")
        self._out.flush()  # a pipe is block-buffered: the parent must hear each line now


def follow(lines: Iterable[str], voice: str, status: Callable[[str], None] | None) -> None:
    """The parent's side: each stage's start to `status`, each stage's end to the log with its
    time; lines that are not ours are ignored."""
    for line in lines:
        event = _event(line)
        if event is None:
            continue
        where = f"Preparing voice {voice}: stage {event['n']}/{event['of']} ({event['stage']})"
        if "s" in event:
            _LOGGER.info("%s took %.1f s", where, event["s"])
        elif status is not None:
            status(where)


def _event(line: str) -> dict[str, Any] | None:
    if not line.startswith(_MARK):
        return None
    try:
        event = json.loads(line[len(_MARK):])
    except ValueError:
        return None
    if not isinstance(event, dict) or not {"n", "of", "stage"} <= event.keys():
        return None
    return event


def run_followed(command: list[str], voice: str, status: Callable[[str], None] | None,
                 timeout_s: float) -> tuple[int, str]:
    """Run the preparer `command`, following its stages as they come; (exit status, its
    stderr). subprocess.TimeoutExpired when it ran longer than `timeout_s` (it is killed)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
        # stderr to a file: a pipe nobody reads while stdout is followed could fill and stall
        # the child (onnx's warnings)
        child: subprocess.Popen[str] | None = None
        expired = threading.Event()
        timer: threading.Timer | None = None
        try:
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                     encoding="utf-8", errors="replace",
                                     env={**os.environ, _PARENT_ENV: str(os.getpid())})

            def kill(running: subprocess.Popen[str] = child) -> None:
                expired.set()
                running.kill()

            timer = threading.Timer(timeout_s, kill)
            timer.daemon = True
            timer.start()
            assert child.stdout is not None
            with child.stdout:
                follow(child.stdout, voice, status)  # ends when the child closes its stdout
            code = child.wait()
        except BaseException:
            # A stop while preparing (SystemExit from `edged run`) may come at any line here,
            # timer.start() included (it waits for the thread): no orphan. One that comes
            # inside Popen, before `child` is set, is the child's own die_with_parent's.
            if child is not None:
                child.kill()
                child.wait()
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if expired.is_set():
            raise subprocess.TimeoutExpired(command, timeout_s)
        stderr.seek(0)
        return code, stderr.read()


def die_with_parent() -> None:
    """The child's side, first thing: the kernel kills it when the daemon that started it dies
    (killed with SIGKILL, or stopped before run_followed knew its child), so no preparer
    burns a small board's CPU for minutes after the daemon is gone. When not started by
    run_followed, nothing."""
    parent = os.environ.get(_PARENT_ENV, "")
    if parent.isdigit() and not signal_when_parent_dies(signal.SIGKILL, int(parent)):
        os._exit(1)
