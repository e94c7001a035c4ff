"""The one way edged downloads a file (`edged voices pull`): bounded whatever the server does.

- Status line and headers: Python's http.client, whose limits hold (a line of 64 KiB at most,
  100 header lines at most); a bad status line, a header past them, broken chunked encoding, a
  body shorter than its Content-Length, a reset: a DownloadError naming it, never a traceback.
- Time: a per-read timeout (`Limits.read_s`) and a total one for the whole download (connect,
  TLS, headers, body, every redirect: `Limits.total_s`), kept by a timer that shuts the socket
  down, so a server trickling one byte every few seconds cannot hold the download for ever.
- Redirects: at most `Limits.redirects`, to the same host only, http -> https or the same scheme.
- Size: the expected size if known, else MAX_BYTES: a larger Content-Length is refused before
  the body, a longer body as soon as it passes.
- Files: the body goes to a temporary file in the target folder and must match its sha256 (and
  size) before the caller may use it; it is removed on leaving, on success or failure, and so
  are the folders the download made when it failed. (Ctrl-C and SIGTERM: the command turns them
  into an exception, commands/common.py `signals_stop`, so this cleanup runs then too.)
Proxies: the environment's http:// proxies (http_proxy, https_proxy, no_proxy), never for
loopback, as urllib did here before.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import ipaddress
import os
import secrets
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from ... import __version__
from ...files import pid_alive
from ..errors import VoiceError

MAX_BYTES: Final = 512 << 20
"""What a download of unknown size may hold (the largest Piper voices are ~120 MB)."""
REDIRECTS: Final = 3
_BLOCK: Final = 1 << 16
_PART_PREFIX: Final = ".edged-download."
_REDIRECT_CODES: Final = frozenset({301, 302, 303, 307, 308})


class DownloadError(VoiceError):
    """A download failed; the message (one line) says what the server did or what took too
    long."""


@dataclass(frozen=True)
class Limits:
    total_s: float = 900.0
    """The whole download, every redirect included (27 MB in 15 min: 30 KB/s)."""
    read_s: float = 30.0
    """Longest wait for any byte (connect, TLS, headers, body)."""
    redirects: int = REDIRECTS


DEFAULT_LIMITS: Final = Limits()


class _Fault(Exception):
    """Why a download failed, in words (becomes a DownloadError naming the URL)."""


@contextlib.contextmanager
def downloaded(url: str, folder: Path, sha256: str, size: int | None = None,
               limits: Limits = DEFAULT_LIMITS) -> Iterator[Path]:
    """A temporary file in `folder` holding `url`'s body, checked against `sha256` (and
    `size`); removed on leaving. DownloadError (a VoiceError) when it cannot be had."""
    made = _make_folders(folder)
    part = folder / f"{_PART_PREFIX}{os.getpid()}.{secrets.token_hex(4)}.part"
    try:
        _remove_stale_parts(folder)
        with _Deadline(limits.total_s) as deadline, _create(part) as sink:
            got, digest = _fetch(url, sink, size if size is not None else MAX_BYTES, limits,
                                 deadline)
        if (size is not None and got != size) or digest != sha256:
            expected = f"{sha256} ({size} bytes)" if size is not None else sha256
            raise DownloadError(f"{url}: sha256 {digest} ({got} bytes) does not match the "
                                f"catalog's {expected}")
        yield part
    except BaseException:
        part.unlink(missing_ok=True)
        for made_folder in reversed(made):  # deepest first; only if still empty
            with contextlib.suppress(OSError):
                made_folder.rmdir()
        raise
    finally:
        part.unlink(missing_ok=True)


def _make_folders(folder: Path) -> list[Path]:
    """mkdir -p `folder`; the folders it made, outermost first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return list(reversed(missing))


def _create(part: Path) -> IO[bytes]:
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "wb")


def _remove_stale_parts(folder: Path) -> None:
    """Parts left by a download that was killed (SIGKILL, power cut): their process is gone."""
    for stale in folder.glob(f"{_PART_PREFIX}*.part"):
        pid = stale.name.removeprefix(_PART_PREFIX).split(".")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                stale.unlink()


def _fetch(url: str, sink: IO[bytes], max_bytes: int, limits: Limits,
           deadline: _Deadline) -> tuple[int, str]:
    """(bytes, sha256) of `url`'s body written to `sink`, following allowed redirects."""
    first = url
    try:
        for hop in range(limits.redirects + 1):
            conn, response = _request(url, limits, deadline)
            try:
                if response.status in _REDIRECT_CODES:
                    if hop == limits.redirects:
                        raise _Fault(f"more than {limits.redirects} redirects")
                    url = _redirect(url, response.getheader("Location"))
                    continue
                if response.status != 200:
                    raise _Fault(f"HTTP {response.status} {_printable(response.reason)}")
                return _body(response, sink, max_bytes, deadline)
            finally:
                conn.close()
        raise AssertionError("unreachable: the last hop returns or raises")
    except (_Fault, http.client.HTTPException, OSError, ValueError) as err:
        if deadline.over():
            reason = f"took longer than {limits.total_s:g} s in all (--timeout)"
        else:
            reason = _reason(err, limits)
        where = first if url == first else f"{first} (redirected to {_printable(url)})"
        raise DownloadError(f"{where}: cannot download: {reason}") from None


def _request(url: str, limits: Limits,
             deadline: _Deadline) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _Fault(f"not an http(s) URL: {_printable(url)}")
    host, port = parts.hostname, parts.port  # ValueError for a bad port
    proxy = _proxy(parts.scheme, host)
    timeout = min(limits.read_s, deadline.left())
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(*(proxy or (host, port)), timeout=timeout,
                                           context=ssl.create_default_context())
        if proxy:
            conn.set_tunnel(host, port)
    else:
        conn = http.client.HTTPConnection(*(proxy or (host, port)), timeout=timeout)
    try:
        deadline.watch(conn)  # before connect: a TLS handshake or proxy tunnel that trickles
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(limits.read_s)
        path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        target = url.split("#")[0] if proxy and parts.scheme == "http" else path
        conn.request("GET", target, headers={"User-Agent": f"edged/{__version__}"})
        return conn, conn.getresponse()
    except BaseException:
        conn.close()
        raise


def _body(response: http.client.HTTPResponse, sink: IO[bytes], max_bytes: int,
          deadline: _Deadline) -> tuple[int, str]:
    length = response.length
    if length is not None and length > max_bytes:
        raise _Fault(f"the server announces {length} bytes, more than the {max_bytes} expected")
    digest = hashlib.sha256()
    got = 0
    try:
        while block := response.read(_BLOCK):
            got += len(block)
            if got > max_bytes:
                raise _Fault(f"the server sent more than {max_bytes} bytes")
            sink.write(block)
            digest.update(block)
    except http.client.IncompleteRead:
        if response.chunked:
            raise _Fault(f"broken chunked encoding after {got} bytes") from None
        raise _Fault(f"the body ended after {got} of {length} bytes") from None
    if deadline.expired:  # the timer shut the socket: what looked like the end was not
        raise _Fault("deadline")
    if length is not None and got < length:
        raise _Fault(f"the body ended after {got} of {length} bytes (Content-Length)")
    return got, digest.hexdigest()


def _redirect(url: str, location: str | None) -> str:
    """The URL a redirect leads to, if it may be followed: same host, same scheme or
    http -> https (an answer checked by sha256 anyway, but a download goes where the catalog
    says and nowhere else)."""
    if not location:
        raise _Fault("a redirect without a Location")
    target = urllib.parse.urljoin(url, location.strip())
    old, new = urllib.parse.urlsplit(url), urllib.parse.urlsplit(target)
    shown = _printable(target)
    if new.scheme not in ("http", "https"):
        raise _Fault(f"refused a redirect to {_printable(new.scheme) or 'no scheme'}: {shown} "
                     f"(only http and https)")
    if (new.hostname or "") != (old.hostname or ""):
        raise _Fault(f"refused a redirect to another host, {_printable(new.hostname or '')}: "
                     f"{shown} (only the same host)")
    if old.scheme == "https" and new.scheme == "http":
        raise _Fault(f"refused a redirect from https to http: {shown}")
    return target


def _reason(err: BaseException, limits: Limits) -> str:
    """What went wrong, in one line (server text escaped and cut short)."""
    if isinstance(err, _Fault):
        return str(err)
    if isinstance(err, http.client.RemoteDisconnected):
        return "the server closed the connection without a reply"
    if isinstance(err, http.client.BadStatusLine):
        line = str(err.args[0]).strip() if err.args else ""
        return f"bad status line {_printable(line)!r}"
    if isinstance(err, http.client.LineTooLong):
        return _printable(str(err))  # "got more than 65536 bytes when reading header line"
    if isinstance(err, http.client.IncompleteRead):
        return "the connection closed before the reply was complete"
    if isinstance(err, http.client.HTTPException):
        return _printable(str(err)) or type(err).__name__
    if isinstance(err, (TimeoutError, socket.timeout)):
        return f"no data for {limits.read_s:g} s (--read-timeout)"
    if isinstance(err, ConnectionResetError):
        return "the connection was reset by the server"
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {err.verify_message}"
    if isinstance(err, ssl.SSLError):
        return f"TLS: {err.reason or err}"
    if isinstance(err, socket.gaierror):
        return f"cannot resolve the host: {err.strerror}"
    if isinstance(err, OSError):
        return err.strerror or str(err) or type(err).__name__
    return f"bad URL: {_printable(str(err))}"


def _printable(text: str, limit: int = 120) -> str:
    """Server-given text as it may be shown on a terminal: printable ASCII, cut short."""
    shown = "".join(c if " " <= c <= "~" else "?" for c in text[:limit])
    return shown + ("..." if len(text) > limit else "")


def _proxy(scheme: str, host: str) -> tuple[str, int] | None:
    """(host, port) of the environment's proxy for `scheme`, None for a direct connection."""
    if _loopback(host) or urllib.request.proxy_bypass(host):
        return None
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy:
        return None
    parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if parts.scheme != "http" or not parts.hostname:
        raise _Fault(f"{scheme}_proxy {_printable(proxy)}: only http:// proxies are supported")
    return parts.hostname, parts.port or 80


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Deadline:
    """The total time bound: once passed, shuts the watched connection's socket down, so
    whatever read is blocked (TLS handshake, headers, a trickled body) ends at once and the
    download reports the deadline. (Name resolution cannot be cut short: the resolver's own
    timeouts bound it.)"""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self.expired = False

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def over(self) -> bool:
        """Whether the bound has passed (also when a connect timed out at its end, a moment
        before the timer)."""
        return self.expired or time.monotonic() >= self._end

    def left(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            self.expired = True
            raise _Fault("deadline")
        return left

    def watch(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._conn = conn
            if self.expired:
                self._shutdown()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            self._shutdown()

    def _shutdown(self) -> None:
        sock = self._conn.sock if self._conn is not None else None
        if isinstance(sock, socket.socket):  # None until connected: connect has its timeout
            with contextlib.suppress(OSError):
                # The plain socket's shutdown, also for TLS: ssl.SSLSocket's would unwrap it
                # under the reading thread's feet.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
