"""An arm64 Debian root under qemu user emulation, unpacked for one test module.

Each user unpacks its own copy of the cached tarball (`host.sh path`, 3 s) into a fresh folder
and mounts proc, sys and dev inside it; `close()` unmounts exactly those mounts, so two runs
never unmount each other's. Commands run as `chroot ROOT env -i VARS...`: nothing of the host's
environment gets in (its pip configuration points at x86 wheel folders and a constraint file).

Two things qemu 7.2 needs from us:
- an ARM /proc/cpuinfo bound over the root's: qemu shows the host's x86 one, onnxruntime's CPU
  detection finds no ARM core in it and `import onnxruntime` dies of SIGSEGV;
- QEMU_CPU=cortex-a72 (a Pi 4), read by qemu from each new process's environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ELF_AARCH64 = 183
"""e_machine of an AArch64 ELF file (62 is x86-64)."""
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_QEMU_CPU = "cortex-a72"
_HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_UNPACK_TIMEOUT_S = 300
_MOUNT_TIMEOUT_S = 30
_CPU_BLOCK = """processor\t: {n}
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3

"""


class RootError(RuntimeError):
    """The cached root is missing, or cannot be unpacked, mounted or unmounted."""


def cached_root() -> Path:
    """The cached root's tarball (tests/arm64/host.sh names it after its recipe)."""
    done = subprocess.run([str(HERE / "host.sh"), "path"], capture_output=True, text=True,
                          check=True, timeout=_MOUNT_TIMEOUT_S)
    return Path(done.stdout.strip())


def binfmt_ready() -> bool:
    """qemu-aarch64 registered with the F flag (host.sh binfmt does it)."""
    entry = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
    try:
        lines = entry.read_text().splitlines()
    except OSError:
        return False
    return "enabled" in lines and any(line.startswith("flags:") and "F" in line for line in lines)


def environment(home: str = "/root") -> dict[str, str]:
    """All a command in the root gets (the Ansible connection passes the same)."""
    return {"PATH": _PATH, "HOME": home, "LANG": "C.UTF-8", "QEMU_CPU": _QEMU_CPU}


def arm_cpuinfo(cores: int) -> str:
    """A Raspberry Pi 4's /proc/cpuinfo (Cortex-A72, r0p3) with `cores` processors."""
    return "".join(_CPU_BLOCK.format(n=n) for n in range(cores))


class Arm64Root:
    """The root in `folder`/root, mounted while the context lasts. `binds` maps host folders
    to folders inside the root (read-only)."""

    def __init__(self, tarball: Path, folder: Path, binds: Mapping[Path, str] | None = None):
        self.tarball = tarball
        self.dir = folder / "root"
        self._cpuinfo = folder / "cpuinfo"
        self._binds = dict(binds or {})
        self._mounted: list[Path] = []

    # -- life cycle ------------------------------------------------------------------------

    def __enter__(self) -> Arm64Root:
        if not self.tarball.is_file():
            raise RootError(f"no cached arm64 root at {self.tarball}: `make test-arm64` builds it")
        self.dir.mkdir(parents=True)
        _run_host(["tar", "--zstd", "-xf", str(self.tarball), "-C", str(self.dir)],
                  _UNPACK_TIMEOUT_S)
        self._configure()
        try:
            self._mount()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _configure(self) -> None:
        """What this host's network needs, written into the root (not into its recipe)."""
        # The package indexes are reached through a proxy that re-signs TLS: the root trusts
        # what the host trusts. A copy of the bundle, not update-ca-certificates (37 s here).
        if _HOST_CA_BUNDLE.is_file():
            shutil.copyfile(_HOST_CA_BUNDLE, self.dir / "etc/ssl/certs/ca-certificates.crt")
        shutil.copyfile("/etc/resolv.conf", self.dir / "etc/resolv.conf")
        # The root shares the host's name: sudo (Ansible's become) warns unless it resolves.
        with open(self.dir / "etc/hosts", "a", encoding="utf-8") as hosts:
            hosts.write(f"127.0.1.1\t{os.uname().nodename}\n")
        self._cpuinfo.write_text(arm_cpuinfo(len(os.sched_getaffinity(0))), encoding="utf-8")

    def _mount(self) -> None:
        self._mount_one(["-t", "proc", "proc"], "proc")
        self._mount_one(["--bind", str(self._cpuinfo)], "proc/cpuinfo")
        self._mount_one(["-t", "sysfs", "sysfs"], "sys")
        # Read-only: the devices work as ever, but a `rm -r` of a root left mounted (a killed
        # run) cannot delete the host's /dev entries.
        self._mount_one(["--bind", "/dev"], "dev", read_only=True)
        for source, inside in self._binds.items():
            self.path(inside).mkdir(parents=True, exist_ok=True)
            self._mount_one(["--bind", str(source)], inside, read_only=True)

    def _mount_one(self, how: list[str], inside: str, read_only: bool = False) -> None:
        target = self.path(inside)
        _run_host(["mount", *how, str(target)], _MOUNT_TIMEOUT_S)
        self._mounted.append(target)
        if read_only:
            _run_host(["mount", "-o", "remount,bind,ro", str(target)], _MOUNT_TIMEOUT_S)

    def close(self) -> None:
        """Unmount what this root mounted, then delete it (never while anything is mounted:
        rm would walk into the host's /dev)."""
        while self._mounted:
            target = self._mounted[-1]
            if subprocess.run(["umount", str(target)], capture_output=True,
                              timeout=_MOUNT_TIMEOUT_S).returncode != 0:
                # Busy: a process of ours still runs in the root. Detach it now; the kernel
                # drops the mount when that process ends.
                _run_host(["umount", "--lazy", str(target)], _MOUNT_TIMEOUT_S)
            self._mounted.pop()
        if self.dir.exists() and not _mounts_under(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- using it --------------------------------------------------------------------------

    def path(self, inside: str) -> Path:
        """The host path of `inside` (a path in the root; no symlinks are followed)."""
        return self.dir / inside.lstrip("/")

    def ids(self, user: str) -> tuple[int, int, list[int]]:
        """uid, gid and supplementary groups of `user` in the root's own passwd and group."""
        entry = _find(self.path("/etc/passwd"), user)
        uid, gid = int(entry[2]), int(entry[3])
        groups = [int(fields[2]) for fields in _entries(self.path("/etc/group"))
                  if user in fields[3].split(",")]
        return uid, gid, groups

    def argv(self, command: Sequence[str], *, user: str | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        """`command` as chroot runs it: as root (HOME=/root) or as `user` (HOME from passwd)."""
        spec: list[str] = []
        home = "/root"
        if user is not None:
            uid, gid, groups = self.ids(user)
            spec = [f"--userspec={uid}:{gid}", f"--groups={','.join(map(str, groups or [gid]))}"]
            home = _find(self.path("/etc/passwd"), user)[5]
        variables = {**environment(home), **(env or {})}
        return ["chroot", *spec, str(self.dir), "env", "-i",
                *(f"{k}={v}" for k, v in variables.items()), *command]

    def run(self, command: Sequence[str], *, timeout: float, user: str | None = None,
            env: Mapping[str, str] | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(command, user=user, env=env), capture_output=True,
                              text=True, timeout=timeout, check=False, **kwargs)

    def popen(self, command: Sequence[str], *, user: str | None = None,
              env: Mapping[str, str] | None = None, **kwargs: Any) -> subprocess.Popen[bytes]:
        """chroot and env exec what follows: the process is `command` itself (signals reach it)."""
        return subprocess.Popen(self.argv(command, user=user, env=env), **kwargs)


def _run_host(argv: list[str], timeout: float) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RootError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")


def _mounts_under(folder: Path) -> list[str]:
    prefix = str(folder.resolve()) + "/"
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if p.startswith(prefix)]


def _entries(path: Path) -> list[list[str]]:
    return [line.split(":") for line in path.read_text().splitlines() if line and line[0] != "#"]


def _find(path: Path, name: str) -> list[str]:
    for fields in _entries(path):
        if fields[0] == name:
            return fields
    raise RootError(f"no {name!r} in the root's {path.name}")
