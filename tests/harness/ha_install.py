"""The Home Assistant installs that the real-HA tests run against (`make test-ha`).

- 2025.4.4: the harness's venv on this host (tests/data/homeassistant/install.sh, pyenv's Python
  3.13.0, which caps HA there);
- 2026.11: HA 2026.11.0 needs Python >= 3.14.2, which only Debian sid has, and sid's python3.14
  needs sid's glibc: HA runs in a cached sid root by chroot (tests/data/homeassistant/sid).

`HA_VERSIONS` (space-separated) picks the versions; `make test-ha` runs the suite once per version.
Each install gives the argv that runs HA's Python with the harness's scripts, so that the tests
drive both the same way: the harness folder (state.json, token, HA's config and log) is bound into
the root at the same path, as is the harness's own folder, so every path means the same inside
and outside. Mounts are this module's own, undone in reverse order when the install is closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESS = Path(os.environ.get("HA_HARNESS", ROOT / "tests" / "data" / "homeassistant"))
DEFAULT_VERSIONS = ("2025.4.4", "2026.11")
SID_VERSION = "2026.11"
_SID_VENV = "/opt/ha/venv"
_SID_PATH = f"{_SID_VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_MOUNT_TIMEOUT_S = 30


def versions() -> list[str]:
    """The HA versions to test: $HA_VERSIONS, else both."""
    return os.environ.get("HA_VERSIONS", " ".join(DEFAULT_VERSIONS)).split()


def streams(version: str) -> bool:
    """HA streams text to a Wyoming TTS server since 2025.7 (synthesize-start/-chunk/-stop)."""
    year, month = (int(part) for part in version.split(".")[:2])
    return (year, month) >= (2025, 7)


@dataclass
class Install:
    """One HA install: `python` runs its interpreter (inside its root and namespace if any)."""

    version: str
    dir: Path
    """The harness's folder (HA_HARNESS_DIR): state.json, token, config/, logs."""
    python: list[str]
    env: dict[str, str]
    netns: str | None = None
    _mounts: list[Path] = field(default_factory=list)

    def run(self, *args: str, timeout: float = 300, check: bool = False
            ) -> subprocess.CompletedProcess[str]:
        """HA's Python with `args` (a harness script and its arguments)."""
        return subprocess.run([*self.python, *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=check)

    def harness(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return self.run(str(HARNESS / "harness.py"), *args, timeout=timeout)

    def state(self) -> dict[str, Any]:
        return json.loads((self.dir / "state.json").read_text())

    def start(self, *options: str) -> dict[str, Any]:
        started = self.harness("start", *options)
        assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
        return self.state()

    def stop(self) -> None:
        self.harness("stop", timeout=90)


def _prefix(netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns] if netns else []


def _host_install(version: str, netns: str | None) -> Install:
    folder = Path(os.environ.get("HA_HARNESS_DIR", "/tmp/ha"))
    venv = Path(os.environ.get("HA_VENV", folder / "venv"))
    if not (venv / "bin" / "hass").exists():
        pytest.skip(f"Home Assistant {version} is not installed in {venv}: `make test-ha` "
                    "installs it (about 4 minutes, once)")
    found = sorted(p.name.removesuffix(".dist-info").split("-", 1)[1]
                   for p in venv.glob("lib/python*/site-packages/homeassistant-*.dist-info"))
    if not any(v == version or v.startswith(f"{version}.") for v in found):
        pytest.fail(f"{venv} holds Home Assistant {', '.join(found) or 'nothing'}, not {version}: "
                    f"HA_VENV=... HA_VERSION={version} tests/data/homeassistant/install.sh")
    env = {**os.environ, "HA_HARNESS_DIR": str(folder), "HA_VENV": str(venv)}
    return Install(version, folder, [*_prefix(netns), str(venv / "bin" / "python")], env, netns)


def sid_root() -> Path:
    done = subprocess.run([str(HARNESS / "sid" / "root.sh"), "path"], capture_output=True,
                          text=True, check=True, timeout=_MOUNT_TIMEOUT_S)
    return Path(done.stdout.strip())


def _mount(install: Install, args: Sequence[str], target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", *args, str(target)], check=True, capture_output=True,
                   timeout=_MOUNT_TIMEOUT_S)
    install._mounts.append(target)


def _unmount_all(install: Install) -> None:
    """Our mounts, last first; a busy one is detached lazily (a process of HA's still there)."""
    while install._mounts:
        target = install._mounts.pop()
        done = subprocess.run(["umount", str(target)], capture_output=True,
                              timeout=_MOUNT_TIMEOUT_S)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(target)], capture_output=True,
                           timeout=_MOUNT_TIMEOUT_S)


def _sid_install(version: str, netns: str | None) -> Install:
    root = sid_root()
    if not (root / _SID_VENV.lstrip("/") / "bin" / "hass").exists():
        pytest.skip(f"the sid root for Home Assistant {version} is not built ({root}): "
                    "`make test-ha` builds it (tests/data/homeassistant/sid/root.sh root, about "
                    "2-5 minutes here, once)")
    if os.geteuid() != 0:
        pytest.skip(f"Home Assistant {version} runs in a chroot: run as root")
    folder = Path(os.environ.get("HA_SID_HARNESS_DIR", f"/tmp/ha-{version}"))
    folder.mkdir(parents=True, exist_ok=True)
    words = [*_prefix(netns), "chroot", str(root), "/usr/bin/env", "-i", f"PATH={_SID_PATH}",
             "HOME=/root", "LANG=C.UTF-8", f"HA_HARNESS_DIR={folder}", f"HA_VENV={_SID_VENV}",
             "SSL_CERT_FILE=/opt/ha/host-ca.crt", "UV_NATIVE_TLS=1",
             f"{_SID_VENV}/bin/python"]
    install = Install(version, folder, words, {**os.environ, "HA_HARNESS_DIR": str(folder)}, netns)
    try:
        _mount(install, ["-t", "proc", "proc"], root / "proc")
        _mount(install, ["-t", "sysfs", "sysfs"], root / "sys")
        _mount(install, ["--bind", "/dev"], root / "dev")
        _mount(install, ["--bind", str(folder)], root / str(folder).lstrip("/"))
        inner = root / str(HARNESS).lstrip("/")
        _mount(install, ["--bind", str(HARNESS)], inner)
        _mount(install, ["-o", "remount,bind,ro"], inner)
        install._mounts.pop()  # the remount is the same mount
    except BaseException:
        _unmount_all(install)
        raise
    return install


@contextlib.contextmanager
def open_install(version: str, *, netns: str | None = None) -> Iterator[Install]:
    """The install of `version`, its root mounted while the context lasts."""
    install = (_sid_install if version == SID_VERSION else _host_install)(version, netns)
    try:
        yield install
    finally:
        _unmount_all(install)
