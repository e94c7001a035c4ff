"""`edged voices pull`: a voice from a registry tarball, checked against the catalog's sha256,
tested against a local HTTP server serving a tarball made here (never the real registry), and
against loopback servers that misbehave on purpose (issue 28): whatever the server does, one
line on stderr, exit status 2, no traceback, nothing left in the voice folder."""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import signal
import socket
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.harness.paths import EDGED
from tests.harness.raw_server import Answer, RawServer, reset, self_signed, trickle

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


def _command(base: str, catalog: Path, out: Path, *extra: str) -> list[str]:
    return [*EDGED, "voices", "pull", "zf_xiaoxiao", "--out", str(out), "--registry", base,
            "--catalog", str(catalog), *extra]


def _pull(registry: dict[str, bytes] | str, catalog: Path, out: Path, *extra: str,
          cert: Path | None = None) -> subprocess.CompletedProcess:
    """The command's result; `cert`: a certificate it trusts (SSL_CERT_FILE, read by OpenSSL)."""
    base = registry if isinstance(registry, str) else registry["base"].decode()
    env = {**os.environ, "SSL_CERT_FILE": str(cert)} if cert else None
    return subprocess.run(_command(base, catalog, out, *extra), capture_output=True, text=True,
                          timeout=60, env=env)


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


# --- servers that misbehave (issue 28) -----------------------------------------------------

_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"


def _refused(r: subprocess.CompletedProcess, *words: str) -> None:
    """One line on stderr naming the problem, exit status 2, no traceback."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]


def _nothing_left(out: Path) -> None:
    """Not a file, not a folder the pull made."""
    assert not out.exists(), sorted(str(p) for p in out.rglob("*"))


def _sized(body: bytes) -> bytes:
    return _HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _faulty(fault: str, tarball: bytes) -> Answer:
    def answer(conn: socket.socket, head: bytes) -> None:
        if fault == "status":
            conn.sendall(b"SPDY/9 two hundred\r\n\r\n")
        elif fault == "huge_header":
            conn.sendall(_HEAD + b"X-Big: " + b"a" * 200_000 + b"\r\n\r\n")
        elif fault == "many_headers":
            conn.sendall(_HEAD + b"".join(b"X-%d: 1\r\n" % i for i in range(500)) + b"\r\n")
        elif fault == "chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n"
                         + tarball[:16] + b"\r\nnot-hex\r\n")
        elif fault == "short":
            conn.sendall(_sized(tarball)[: -len(tarball) // 2])
        else:
            conn.sendall(_sized(tarball)[: -len(tarball) // 2])
            reset(conn)
    return answer


@pytest.mark.parametrize(("fault", "named"), [
    ("status", "status line"), ("huge_header", "header line"), ("many_headers", "headers"),
    ("chunked", "chunked"), ("short", "ended after"), ("reset", "reset")])
def test_pull_bad_server_one_line(tmp_path: Path, fault: str, named: str) -> None:
    """A bad status line, a 200 KB header, 500 headers, broken chunked encoding, a body shorter
    than its Content-Length, a reset: each is one line naming it (main: tracebacks)."""
    tarball = _tarball()
    with RawServer(_faulty(fault, tarball)) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices")
    _refused(r, "cannot download", named)
    _nothing_left(tmp_path / "voices")


@pytest.mark.parametrize("where", ["headers", "body", "tls_handshake"])
def test_pull_total_time_bound(tmp_path: Path, where: str) -> None:
    """A server that sends one byte every half second (never slow enough for a per-read
    timeout) is dropped once `--timeout` has passed, in its headers as in its body; so is one
    that never answers a TLS handshake (here with a per-read timeout longer than the test)."""
    tarball = _tarball()

    def answer(conn: socket.socket, head: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: " if where == "headers"
                     else _HEAD + b"Content-Length: %d\r\n\r\n" % len(tarball))
        trickle(server.stopping, conn)

    with RawServer(answer) as server:  # a TLS ClientHello never completes its request head
        base = server.url.replace("http:", "https:") if where == "tls_handshake" else server.url
        r = _pull(base, _catalog(tmp_path, tarball), tmp_path / "voices", "--timeout", "2",
                  "--read-timeout", "100")
    _refused(r, "took longer than 2 s", "--timeout")
    _nothing_left(tmp_path / "voices")


def test_pull_read_timeout(tmp_path: Path) -> None:
    """A server that takes the request and says nothing is dropped after `--read-timeout`."""
    tarball = _tarball()
    with RawServer(lambda conn, head: server.stopping.wait(60) and None) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices",
                  "--read-timeout", "1")
    _refused(r, "no data for 1 s", "--read-timeout")
    _nothing_left(tmp_path / "voices")


def _redirect(location: str) -> bytes:
    return (b"HTTP/1.1 302 Found\r\nLocation: " + location.encode() +
            b"\r\nContent-Length: 0\r\n\r\n")


def test_pull_refuses_a_redirect_to_another_host(tmp_path: Path) -> None:
    """A redirect to another host (here 127.0.0.2, serving the right tarball) is refused
    before that host is contacted (main followed it and installed what it served)."""
    tarball = _tarball()
    with RawServer(lambda conn, head: conn.sendall(_sized(tarball)), "127.0.0.2") as other, \
            RawServer(lambda conn, head: conn.sendall(_redirect(other.url + _PATH))) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices")
    _refused(r, "redirect", "another host", "127.0.0.2")
    assert other.connections == 0
    _nothing_left(tmp_path / "voices")


def test_pull_refuses_a_redirect_to_ftp(tmp_path: Path) -> None:
    """A redirect to ftp:// is refused before anything connects (main tried FTP)."""
    tarball = _tarball()
    with RawServer(None) as ftp, RawServer(lambda conn, head: conn.sendall(
            _redirect(f"ftp://127.0.0.1:{ftp.port}{_PATH}"))) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices")
    _refused(r, "redirect", "ftp")
    assert ftp.connections == 0
    _nothing_left(tmp_path / "voices")


def test_pull_follows_few_redirects(tmp_path: Path) -> None:
    """An endless chain of same-host redirects is given up after a few hops (main: ten)."""
    tarball = _tarball()

    def answer(conn: socket.socket, head: bytes) -> None:
        conn.sendall(_redirect(f"/hop{len(server.requests)}.tgz"))

    with RawServer(answer) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices")
    _refused(r, "redirects")
    assert len(server.requests) <= 4
    _nothing_left(tmp_path / "voices")


def test_pull_follows_a_same_host_redirect(tmp_path: Path) -> None:
    """A redirect on the same host (a registry moving its tarballs) is followed."""
    tarball = _tarball()

    def answer(conn: socket.socket, head: bytes) -> None:
        moved = head.split(b" ")[1] == _PATH.encode()
        conn.sendall(_redirect("/moved/kokoro-js.tgz") if moved else _sized(tarball))

    with RawServer(answer) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "voices" / "kokoro" / "zf_xiaoxiao.bin").read_bytes() == _STYLE
    assert [h.split(b" ")[1] for h in server.requests] == [_PATH.encode(),
                                                            b"/moved/kokoro-js.tgz"]


@pytest.mark.parametrize("trusted", [True, False])
def test_pull_follows_http_to_https(tmp_path: Path, trusted: bool) -> None:
    """http -> https on the same host is followed; the https server's certificate is checked
    (a self-signed one is refused in one line unless the client is told to trust it)."""
    tarball = _tarball()
    cert, context = self_signed(tmp_path)
    with RawServer(lambda conn, head: conn.sendall(_sized(tarball)), tls=context) as tls, \
            RawServer(lambda conn, head: conn.sendall(_redirect(tls.url + _PATH))) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices",
                  cert=cert if trusted else None)
    if trusted:
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "voices" / "kokoro" / "zf_xiaoxiao.bin").read_bytes() == _STYLE
    else:
        _refused(r, "certificate")
        _nothing_left(tmp_path / "voices")
    assert tls.connections == 1


def test_pull_refuses_https_to_http(tmp_path: Path) -> None:
    """An https server redirecting to http on the same host is refused (main followed it)."""
    tarball = _tarball()
    cert, context = self_signed(tmp_path)
    with RawServer(lambda conn, head: conn.sendall(_sized(tarball))) as plain, \
            RawServer(lambda conn, head: conn.sendall(_redirect(plain.url + _PATH)),
                      tls=context) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices", cert=cert)
    _refused(r, "redirect from https to http")
    assert plain.connections == 0
    _nothing_left(tmp_path / "voices")


@pytest.mark.parametrize("announced", [True, False])
def test_pull_size_bound(tmp_path: Path, announced: bool) -> None:
    """A body larger than the catalog's size is refused: at once when its Content-Length says
    so, else once the catalog's size is passed."""
    tarball = _tarball()

    def answer(conn: socket.socket, head: bytes) -> None:
        length = b"Content-Length: %d\r\n" % (1 << 40) if announced else b""
        conn.sendall(_HEAD + length + b"\r\n" + tarball)
        while not server.stopping.is_set():
            conn.sendall(bytes(1 << 16))

    with RawServer(answer) as server:
        r = _pull(server.url, _catalog(tmp_path, tarball), tmp_path / "voices")
    _refused(r, f"announces {1 << 40} bytes" if announced else f"more than {len(tarball)} bytes")
    _nothing_left(tmp_path / "voices")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_pull_stopped_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGTERM, Ctrl-C or SIGHUP during the download: the partial file (there while downloading) is
    removed, one line says why, the status is 128 + the signal's number."""
    tarball = _tarball()
    out = tmp_path / "voices"

    def answer(conn: socket.socket, head: bytes) -> None:
        conn.sendall(_sized(tarball)[: -len(tarball) // 2])
        trickle(server.stopping, conn)

    with RawServer(answer) as server:
        proc = subprocess.Popen(_command(server.url, _catalog(tmp_path, tarball), out),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert server.received.wait(60)
            assert list((out / "kokoro").glob(".*.part"))  # created before connecting
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert len(err.strip().splitlines()) == 1 and sig.name in err, err
    _nothing_left(out)


def test_pull_removes_parts_of_killed_pulls(tmp_path: Path, registry: dict[str, bytes]) -> None:
    """A part file whose process is gone (a pull killed outright) is removed by the next pull
    into the folder; one whose process lives (another pull under way) is left to it."""
    tarball = _tarball()
    registry[_PATH] = tarball
    kokoro = tmp_path / "voices" / "kokoro"
    kokoro.mkdir(parents=True)
    dead = subprocess.Popen(["true"])  # a pid whose process has exited
    dead.wait()
    stale = kokoro / f".edged-download.{dead.pid}.00000000.part"
    live = kokoro / f".edged-download.{os.getpid()}.00000000.part"
    stale.write_bytes(b"half a tarball")
    live.write_bytes(b"another pull's")
    r = _pull(registry, _catalog(tmp_path, tarball), tmp_path / "voices")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in kokoro.iterdir()) == [live.name, "zf_xiaoxiao.bin"]


def test_pull_through_a_proxy(tmp_path: Path) -> None:
    """http_proxy is used for a host that is not loopback (the proxy here serves the tarball
    itself and sees the absolute URL); no_proxy and loopback hosts go direct."""
    tarball = _tarball()
    with RawServer(lambda conn, head: conn.sendall(_sized(tarball))) as proxy:
        env = {**os.environ, "http_proxy": proxy.url, "no_proxy": ""}
        r = subprocess.run(_command("http://registry.invalid", _catalog(tmp_path, tarball),
                                    tmp_path / "voices"),
                           capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert proxy.requests[0].startswith(f"GET http://registry.invalid{_PATH} ".encode())
