"""Home Assistant finds edged's Wyoming server by zeroconf (`make test-ha`), off loopback and
without leaving the machine: HA (with its `zeroconf:` integration, as a real installation's
default_config) in one network namespace, edged in another, joined by a veth pair with two
private addresses that this test creates and removes; each namespace has only its loopback and
its end of the pair (and a multicast route onto it), so mDNS goes nowhere else. edged listens on
its veth address, so it advertises `_wyoming._tcp.local.` there; HA must show a Wyoming config
flow discovered by zeroconf, and the flow, confirmed, must give a TTS entity that speaks
(the harness's check_zeroconf.py, run in HA's namespace).

Needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN (`ip netns add`), as a developer's machine or
CI run as root here has; skipped with the reason where namespaces cannot be made.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.ha_install import HARNESS, open_install, versions
from tests.harness.ports import free_port

pytestmark = [pytest.mark.long, pytest.mark.ha]

_HA_ADDRESS, _EDGED_ADDRESS = "10.127.27.1", "10.127.27.2"
"""The veth pair's two ends (a /30 of their own); no other address is ever a target."""
_TIMEOUT_S = 120.0


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@contextlib.contextmanager
def _namespaces() -> Iterator[tuple[str, str]]:
    """(HA's namespace, edged's namespace), joined by a veth pair; both removed after."""
    tag = uuid.uuid4().hex[:6]
    names = (f"edged-ha-{tag}", f"edged-sp-{tag}")
    made: list[str] = []
    try:
        for name in names:
            _ip("netns", "add", name)
            made.append(name)
    except (OSError, FileNotFoundError) as err:
        for name in made:
            _ip("netns", "del", name)
        pytest.skip(f"network namespaces cannot be made here ({err}): this test needs `ip netns "
                    "add` as root with CAP_NET_ADMIN and CAP_SYS_ADMIN (a Linux host or VM run "
                    "as root, as this project's developer and CI machines are; not an "
                    "unprivileged container)")
    try:
        ends = (f"veha{tag}", f"vesp{tag}")
        _ip("link", "add", ends[0], "type", "veth", "peer", "name", ends[1])
        for name, end, address in zip(names, ends, (_HA_ADDRESS, _EDGED_ADDRESS), strict=True):
            _ip("link", "set", end, "netns", name)
            _ip("-n", name, "addr", "add", f"{address}/30", "dev", end)
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "link", "set", end, "up")
            _ip("-n", name, "route", "add", "224.0.0.0/4", "dev", end)
        yield names
    finally:
        for name in names:  # the veth pair goes with its namespaces
            _ip("netns", "del", name)


@pytest.mark.parametrize("version", versions())
def test_home_assistant_discovers_edged_by_zeroconf(
        version: str, tmp_path: Path, default_voice_path: Path) -> None:
    with _namespaces() as (ha_ns, edged_ns), open_install(version, netns=ha_ns) as install:
        daemon = DaemonProc(tmp_path / "edged", free_port(), f"edged/zc-{uuid.uuid4().hex[:6]}",
                            default_voice_path, device_id="hallway",
                            homeassistant={"discovery": False},
                            wyoming={"enabled": True, "host": _EDGED_ADDRESS, "port": 10300,
                                     "allowed_clients": [_HA_ADDRESS]})
        daemon.launcher = ["ip", "netns", "exec", edged_ns]
        try:
            install.start("--zeroconf")
            daemon.start()  # its broker is nowhere: edged serves Wyoming all the same
            wait_log(daemon, "Zeroconf: advertising", _TIMEOUT_S)
            result = install.run(str(HARNESS / "check_zeroconf.py"), "--host", _EDGED_ADDRESS,
                                 "--port", "10300", "--voice", "en_US-joe-medium",
                                 timeout=_TIMEOUT_S * 3)
            sys.stdout.write(result.stdout[-3000:])
            assert result.returncode == 0, (result.stdout[-3000:] + result.stderr[-2000:]
                                            + daemon.log_text()[-2000:])
            report = json.loads((install.dir / "zeroconf.json").read_text())
            assert report["flow"]["context"]["source"] == "zeroconf"
            assert report["speech"]["status"] == 200
        finally:
            daemon.stop()
            install.stop()
