"""Listening sockets, bound in the composition root before anything starts (so a port in use is
one line at start-up), without the server library that will serve them."""

from __future__ import annotations

import socket


def bind(host: str, port: int) -> socket.socket:
    """A listening, non-blocking TCP socket on host:port; OSError when it cannot be had.

    The kernel accepts connections into its backlog from here on: a client that connects before
    the server serves this socket (the HTTP server starts right after READY) waits, and is not
    refused."""
    family, kind, proto, _name, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
