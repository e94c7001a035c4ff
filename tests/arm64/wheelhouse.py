"""The aarch64 wheels of edged's dependencies, kept on the host between runs of the arm64 test.

pip's own HTTP cache stores nothing behind this network's TLS proxy (its answers carry no
Cache-Control: the cache held 4 KB after installing 33 packages), and pip prefers an index's
file over a --find-links file of the same version. So the cache is a wheelhouse:
- a run whose wheelhouse is not complete installs from PyPI, as a Pi does (3 min 4 s);
- after it, the host downloads the same pinned versions for aarch64 (about 10 s natively; an
  sdist such as sdnotify's is built here, kept only when it makes a pure-Python wheel);
- later runs install `--no-index --find-links` from the wheelhouse (1 min 6 s).
The pins are filed under a digest of edged's dependency list, so a changed pyproject.toml goes
back to PyPI once.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

_PLATFORMS = ("manylinux_2_28_aarch64", "manylinux_2_27_aarch64", "manylinux_2_26_aarch64",
              "manylinux_2_17_aarch64", "manylinux2014_aarch64", "linux_aarch64")
_HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_PIP_TIMEOUT_S = 600
_INFO = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+?)(-py[0-9.]+)?\.(?P<kind>dist|egg)-info$")
_NOT_PINNED = {"edged", "pip", "setuptools", "wheel"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def dependency_digest(pyproject: Path) -> str:
    """The first 12 hex of the sha256 of edged's runtime dependency list."""
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return hashlib.sha256("\n".join(sorted(deps)).encode()).hexdigest()[:12]


def installed_pins(site_packages: Path) -> dict[str, tuple[str, bool]]:
    """name -> (version, installed from a wheel) of what pip put into a venv."""
    pins = {}
    for info in site_packages.iterdir():
        found = _INFO.match(info.name)
        if found and canonical(found["name"]) not in _NOT_PINNED:
            pins[canonical(found["name"])] = (found["version"], found["kind"] == "dist")
    return pins


class Wheelhouse:
    """`folder` with the wheels and one pins file per dependency digest."""

    def __init__(self, folder: Path, digest: str) -> None:
        self.folder = folder
        self.pins_file = folder / f"pins-{digest}.txt"

    def _have(self, name: str, version: str) -> bool:
        return any(canonical(w.name.split("-")[0]) == name and w.name.split("-")[1] == version
                   for w in self.folder.glob("*.whl"))

    def complete(self) -> bool:
        """Every package of the last install, at its version, is here as a wheel."""
        if not self.pins_file.is_file():
            return False
        pins = [line.split("==") for line in self.pins_file.read_text().split()]
        return all(self._have(name, version) for name, version in pins)

    def fill(self, site_packages: Path) -> list[str]:
        """Download (or build) what the venv at `site_packages` holds; the pins file is written
        only when every wheel is here. Returns the packages that could not be kept."""
        self.folder.mkdir(parents=True, exist_ok=True)
        pins = installed_pins(site_packages)
        wheels = [f"{n}=={v}" for n, (v, wheel) in pins.items() if wheel and not self._have(n, v)]
        sdists = [f"{n}=={v}" for n, (v, wheel) in pins.items() if not wheel and not self._have(n, v)]
        if wheels:
            platforms = [arg for p in _PLATFORMS for arg in ("--platform", p)]
            _pip(["download", "--no-deps", "--only-binary=:all:", *platforms,
                  "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                  "--abi", "abi3", "--abi", "none", "--dest", str(self.folder), *wheels])
        missing = []
        for spec in sdists:
            _pip(["wheel", "--no-deps", "--wheel-dir", str(self.folder), spec])
            name, version = spec.split("==")
            built = [w for w in self.folder.glob("*.whl")
                     if canonical(w.name.split("-")[0]) == name and w.name.split("-")[1] == version]
            # A wheel built on x86 is only good for aarch64 when it is pure Python.
            for wheel in built:
                if not wheel.name.endswith("-none-any.whl"):
                    wheel.unlink()
                    missing.append(spec)
        if not missing:
            self.pins_file.write_text("".join(f"{n}=={v}\n" for n, (v, _) in sorted(pins.items())))
        return missing


def _pip(args: list[str]) -> None:
    """The host's pip with none of the host's pip configuration (x86 wheel folders, a
    constraint file) and the host's CA bundle (the TLS proxy)."""
    cert = ["--cert", str(_HOST_CA_BUNDLE)] if _HOST_CA_BUNDLE.is_file() else []
    done = subprocess.run([sys.executable, "-m", "pip", "--isolated", "--quiet",
                           "--disable-pip-version-check", *cert, *args],
                          timeout=_PIP_TIMEOUT_S, capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
    if done.returncode != 0:
        raise RuntimeError(f"pip {args[0]} failed: {done.stderr.strip()[-2000:]}")
