"""`edged run` as a command: start-up errors, and the private broker `make run` relies on."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import uuid
from pathlib import Path

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.paths import EDGED, ROOT
from tests.harness.pidfds import all_end, watch
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_private_broker_is_started_when_none_answers(tmp_path: Path,
                                                     tiny_voice_path: Path) -> None:
    """`make run` on a fresh machine: no broker at the configured loopback address, so
    `--private-broker-if-needed` starts one, says so (with the mosquitto_pub line to try),
    serves requests through it and stops it again on exit."""
    port = free_port()
    prefix = f"edged-test/{uuid.uuid4().hex[:8]}"
    d = DaemonProc(tmp_path / "d", port, prefix, tiny_voice_path)
    d.config["mqtt"]["host"] = "localhost"
    d.start(None, "--private-broker-if-needed")
    try:
        wait_log(d, "a private mosquitto was started")
        assert f"mosquitto_pub -h localhost -p {port} -q 1 -t '{prefix}/say'" in d.log_text()
        w = Watcher(port, prefix)
        try:
            w.online()
            w.say({"text": "Private broker.", "id": "pb1"})
            assert w.final("pb1")["event"] == "finished"
        finally:
            w.close()
        d.signal(signal.SIGTERM)
        assert d.wait(15) == 0
        assert not _port_open(port), "the private broker outlived the daemon"
    finally:
        d.stop()


def _broker_pid(d: DaemonProc) -> int:
    """The private mosquitto's pid, as the daemon's start-up line names it."""
    found = re.search(r"private mosquitto was started for this run \(pid (\d+)", d.log_text())
    assert found, d.log_text()
    return int(found.group(1))


def test_a_killed_daemon_takes_its_private_broker_along_and_a_reload_keeps_it(
        tmp_path: Path, tiny_voice_path: Path) -> None:
    """A reload (SIGHUP: the daemon re-executes itself) keeps the private broker it started;
    a daemon killed outright (SIGKILL, the OOM killer), whose `finally` never runs, no longer
    leaves it running: before, the next `make run` found it answering and used it without
    owning it (nobody ever stopped it)."""
    port = free_port()
    prefix = f"edged-test/{uuid.uuid4().hex[:8]}"
    d = DaemonProc(tmp_path / "d", port, prefix, tiny_voice_path)
    d.config["mqtt"]["host"] = "localhost"
    w: Watcher | None = None
    pid = 0
    d.start(None, "--private-broker-if-needed")
    try:
        wait_log(d, "a private mosquitto was started")
        pid = _broker_pid(d)
        broker = watch([pid])
        assert broker, "the private broker is not running"
        w = Watcher(port, prefix)
        w.online()
        mark = w.mark()
        d.signal(signal.SIGHUP)
        w.offline(mark)
        w.online(mark, timeout=30)  # the re-executed daemon, through the same broker
        assert not select.select(broker, [], [], 0)[0], "the broker ended with the reload"
        w.close()
        w = None
        d.signal(signal.SIGKILL)
        assert d.wait(15) == -signal.SIGKILL
        # Left running, it would have run until someone killed it by hand.
        assert all_end(broker, 10.0), "the private broker outlived the killed daemon"
        assert not _port_open(port)
    finally:
        if w is not None:
            w.close()
        d.stop()
        if pid:  # a failed run leaves no broker behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _preparers(cache: Path) -> list[int]:
    """Pids of voice preparers (python -m edged.voice.prepare) working for `cache`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"edged.voice.prepare" in cmdline and str(cache).encode() in cmdline:
            found.append(int(proc.name))
    return found


def test_a_stop_while_the_first_start_prepares_leaves_no_broker_or_preparer(
        tmp_path: Path, default_voice_path: Path) -> None:
    """`make run` stopped (systemd, Ctrl-C) during its first start, while the voice is being
    prepared (seconds, before the daemon handles signals): the private mosquitto it started and
    the preparing child stop with it. Before, both were left running."""
    port = free_port()
    d = DaemonProc(tmp_path / "d", port, f"edged-test/{uuid.uuid4().hex[:8]}", default_voice_path)
    d.config["mqtt"]["host"] = "localhost"
    cache = tmp_path / "d" / "cache"
    d.start(None, "--private-broker-if-needed")
    try:
        wait_log(d, "a private mosquitto was started")
        wait_log(d, "Preparing voice", timeout=60)
        preparers = watch(_preparers(cache))
        assert preparers, "the voice was not being prepared"
        d.signal(signal.SIGTERM)
        assert d.wait(15) == 0
        assert not _port_open(port), "the private broker outlived the daemon"
        # A preparer that was not stopped runs on for its whole preparation, far longer.
        assert all_end(preparers, 5.0), "the preparing child outlived the daemon"
        assert not _preparers(cache)
    finally:
        d.stop()


def test_no_private_broker_when_one_answers(tmp_path: Path, broker: Broker,
                                            unique_prefix: str, tiny_voice_path: Path) -> None:
    """With a broker already listening, the flag changes nothing and the broker stays up."""
    w = Watcher(broker.port, unique_prefix)
    d = DaemonProc(tmp_path / "d", broker.port, unique_prefix, tiny_voice_path)
    try:
        d.start(w, "--private-broker-if-needed")
        assert "private mosquitto" not in d.log_text()
        d.signal(signal.SIGTERM)
        assert d.wait(10) == 0
        assert _port_open(broker.port)
    finally:
        d.stop()
        w.close()


def test_start_up_errors_are_one_line_and_exit_2(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A missing voice or a bad config stops `edged run` at once: one line, status 2."""
    dirs = f"cache: {{dir: {tmp_path / 'cache'}}}\n"  # never the repo's folders
    tiny = f"{dirs}output: publish\nvoice: {{name: {tiny_voice_path}}}\nmqtt:\n" \
           f"  state_dir: {tmp_path / 'state'}\n"
    cases = {
        tiny.replace(str(tiny_voice_path), "/nonexistent/voice.onnx"): "voice model file not found",
        tiny + "  topic_prefix: edged/+\n": "mqtt.topic_prefix: must not contain '+'",
        tiny + "  username: u\n  password_file: nope\n": "mqtt.password_file: ",
        "limits: {queue: 0}\n": "limits.queue: 0 is out of range",
    }
    for i, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"c{i}.yaml"
        path.write_text(text)
        result = subprocess.run([*EDGED, "run", "--config", str(path)], cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, (text, result.stderr)
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("edged: ") and message in last, (text, result.stderr)
        assert "Traceback" not in result.stderr
