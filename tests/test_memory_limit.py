"""MemoryMax honoured for real (issue 12): the daemon runs in a memory-limited cgroup (cgroup
v1 here: `memory.limit_in_bytes`, made by the test), as under systemd's MemoryMax=512M, while a
200 MB payload arrives. Before, paho read it whole and the kernel killed the daemon."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher

_V1_MEMORY = Path("/sys/fs/cgroup/memory")
_LIMIT = 512 << 20


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A fresh cgroup v1 memory group limited to 512 MiB; removed afterwards (its processes
    are stopped first)."""
    group = _V1_MEMORY / f"edged-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(_LIMIT))
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            os.kill(int(pid), signal.SIGKILL)
        group.rmdir()


def _oom_kills(group: Path) -> int:
    fields = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
    return int(fields.get("oom_kill", 0))


def _publish_huge(port: int, topic: str, size: int) -> None:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"huge-{uuid.uuid4().hex[:6]}",
                         protocol=MQTTProtocolVersion.MQTTv5)
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        client.publish(topic, b"\x00" * size, qos=1).wait_for_publish(120)
    finally:
        client.disconnect()
        client.loop_stop()


@pytest.mark.timeout(300)
def test_a_200_mb_payload_leaves_a_512_mb_daemon_up_and_speaking(
        tmp_path: Path, tiny_voice_path: Path, cgroup: Path) -> None:
    """In a 512 MiB memory cgroup, a 200 MB request (QoS 1) does not kill the daemon (no OOM
    kill in the group, its peak usage far under the limit), and the next request is spoken.
    The daemon reads the group's limit itself: limits.memory_mb above it is refused at start."""
    port = free_port()
    broker = Broker(tmp_path / "broker", f"listener {port} 127.0.0.1\nallow_anonymous true\n",
                    [port]).start()
    prefix = f"edged-oom/{uuid.uuid4().hex[:10]}"
    w = Watcher(port, prefix, topics=("event", "availability"))
    d = DaemonProc(tmp_path / "d", port, prefix, tiny_voice_path, limits={"memory_mb": 400})
    d.launcher = ["sh", "-c", f'echo $$ > {cgroup / "cgroup.procs"} && exec "$@"', "sh"]
    try:
        d.start(w)
        _publish_huge(port, f"{prefix}/say", 200 * 10**6)
        rid = f"after-{uuid.uuid4().hex[:6]}"
        w.say({"text": "Still here after two hundred megabytes.", "id": rid})
        assert w.final(rid, 60)["event"] == "finished"
        assert d.alive() and _oom_kills(cgroup) == 0
        peak = int((cgroup / "memory.max_usage_in_bytes").read_text())
        print(f"512 MiB group after a 200 MB payload: peak usage {peak >> 20} MiB, no OOM kill")
        assert peak < _LIMIT // 2, f"the group peaked at {peak >> 20} MiB"
        d.stop()
        greedy = DaemonProc(tmp_path / "greedy", port, prefix, tiny_voice_path,
                            limits={"memory_mb": 600})
        greedy.launcher = d.launcher
        greedy.start()
        assert greedy.wait(60) == 2
        assert "limits.memory_mb: 600 MB is more than this service's memory limit (512 MB" in (
            greedy.log_text())
    finally:
        d.stop()
        w.close()
        broker.stop()
