"""`edged run` as a child process with a generated config, and what a test reads from it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from .kokoro_seed import seed_cache
from .paths import EDGED, ROOT
from .watcher import TIMEOUT_S, Watcher


class DaemonProc:
    """`edged run` in a subprocess with a generated config (output: publish by default)."""

    def __init__(self, workdir: Path, port: int, prefix: str, voice_path: Path, **overrides: Any):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "device_id": "test",
            "output": "publish",
            "log_level": "info",
            "voice": {"name": str(voice_path)},
            "mqtt": {"host": "127.0.0.1", "port": port, "topic_prefix": prefix,
                     "client_id": f"edged-{uuid.uuid4().hex[:8]}", "keepalive_s": 5,
                     "reconnect_min_s": 0.1, "reconnect_max_s": 0.5},
            "limits": {"stop_timeout_s": 5},
            "cache": {"dir": "cache"},
        }
        config["mqtt"]["state_dir"] = "state"  # next to the config file, not in the repo
        for section, values in overrides.items():
            if isinstance(values, dict):
                config.setdefault(section, {}).update(values)
            else:
                config[section] = values
        self.config = config
        self.path = workdir / "edged.yaml"
        self.log = workdir / "daemon.log"
        self.proc: subprocess.Popen | None = None
        self.launcher: list[str] = []
        """Words before `python -m edged run ...` (e.g. a shell that joins a cgroup first)."""
        self.env: dict[str, str] = {}
        """Environment variables set for the daemon beside this process's own."""

    def write(self) -> None:
        self.path.write_text(yaml.safe_dump(self.config))

    def start(self, watcher: Watcher | None = None, *args: str, timeout: float = 60) -> DaemonProc:
        """Start `edged run`; with a watcher, until the daemon's `online` (`timeout` s)."""
        self.write()
        seed_cache(self.workdir / self.config["cache"]["dir"])  # kokoro_seed.py
        mark = watcher.mark() if watcher else 0
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*self.launcher, *EDGED, "run", "--config", str(self.path), *args],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            )
        if watcher is not None:
            try:
                watcher.online(mark, timeout=timeout)
            except AssertionError:
                self.stop()  # not left running behind a fixture that never yields
                raise AssertionError(f"daemon not online; log:\n{self.log_text()}") from None
        return self

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = TIMEOUT_S) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def wait_log(daemon: DaemonProc, text: str, timeout: float = TIMEOUT_S) -> None:
    """Wait until the daemon's log shows `text` (polling a file: there is no event)."""
    deadline = time.monotonic() + timeout
    while text not in daemon.log_text():
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in the daemon log:\n{daemon.log_text()[-3000:]}")
        time.sleep(0.05)


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident set (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/PID/status")
