"""A real mosquitto on a loopback port, started and stopped by a test or a benchmark."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import IO

from .ports import free_port, wait_port

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


class Broker:
    """A mosquitto child process on a loopback port, restartable on the same port.

    `persistence`: sessions and retained messages kept on disk across a restart (the tests'
    broker, which they kill and start again). `log_all`: every packet in `log` (what the tests
    read back); the benchmarks log mosquitto's default types only, so it spends nothing on
    per-packet lines.
    """

    def __init__(self, workdir: Path, conf_body: str, ports: list[int], *,
                 persistence: bool = True, log_all: bool = True) -> None:
        self.workdir, self.ports, self.log = workdir, ports, workdir / "broker.log"
        self.port = ports[0]
        self.conf = workdir / "mosquitto.conf"
        (workdir / "data").mkdir(parents=True, exist_ok=True)
        common = ("user root\n" if os.geteuid() == 0 else "") + "log_dest stdout\n"
        if persistence:
            common += f"persistence true\npersistence_location {workdir}/data/\n"
        if log_all:
            common += "log_type all\nconnection_messages true\n"
        self.conf.write_text(common + conf_body)
        self.proc: subprocess.Popen | None = None
        self._logf: IO[bytes] | None = None

    @classmethod
    def anonymous(cls, workdir: Path, extra: str = "", **options: bool) -> Broker:
        """A broker (not started) on a free port that lets anyone in; `extra`: more config."""
        port = free_port()
        return cls(workdir, f"listener {port} 127.0.0.1\nallow_anonymous true\n{extra}", [port],
                   **options)

    def start(self) -> Broker:
        self._logf = open(self.log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.conf)], stdout=self._logf, stderr=subprocess.STDOUT
        )
        for p in self.ports:
            wait_port(p, proc=self.proc)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._logf is not None:
            self._logf.close()
            self._logf = None


def mosquitto_version() -> str:
    """The first line of `mosquitto -h` (its version)."""
    out = subprocess.run([MOSQUITTO, "-h"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else ""
