"""A loopback TCP server that answers each request with a function of the test's: HTTP servers
that misbehave on purpose (bad status lines, endless headers, trickles, resets, redirects
elsewhere) for the HTTP clients edged runs (`edged voices pull`)."""

from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

Answer = Callable[[socket.socket, bytes], None]
"""(connection, the request head) -> None: write whatever the test wants, then return."""


class RawServer:
    """Accepts on `host`:0; reads each request's head, records it, then calls `answer` in a
    thread of its own. `answer=None`: close each connection at once (a port that must not be
    contacted counts its `connections`). `tls`: speak TLS (an https:// server)."""

    def __init__(self, answer: Answer | None, host: str = "127.0.0.1",
                 tls: ssl.SSLContext | None = None) -> None:
        self._listener = socket.create_server((host, 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}"
        self._tls = tls
        self.connections = 0
        self.requests: list[bytes] = []
        self.received = threading.Event()
        """Set once a whole request head has arrived."""
        self.stopping = threading.Event()
        """Set by close(): answers that trickle or wait stop then."""
        self._answer = answer
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.stopping.set()
        self._listener.close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if self._answer is None:
                return
            conn.settimeout(30)
            head = b""
            try:
                if self._tls is not None:
                    conn = self._tls.wrap_socket(conn, server_side=True)
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    head += chunk
                self.requests.append(head)
                self.received.set()
                self._answer(conn, head)
            except OSError:
                pass  # the client gave up: what these servers are for


def reset(conn: socket.socket) -> None:
    """Close `conn` with a TCP reset (SO_LINGER 0) instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def trickle(stopping: threading.Event, conn: socket.socket, byte: bytes = b"x",
            every_s: float = 0.5) -> None:
    """Send `byte` every `every_s` until the client goes or the server stops (the pace is the
    server's behaviour under test, not a wait of the test's)."""
    while not stopping.wait(every_s):
        conn.sendall(byte)


def self_signed(folder: Path, host: str = "127.0.0.1") -> tuple[Path, ssl.SSLContext]:
    """(certificate file, server context) for `host`, made with the openssl command line; give
    the file as SSL_CERT_FILE to a client that is to trust it."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={host}",
                    "-addext", f"subjectAltName=IP:{host}", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, context
