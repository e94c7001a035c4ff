"""HTTP over a raw socket: send any bytes (broken, hostile, pipelined) and read what comes back,
parsed only as far as a test needs (the status line, the headers, the body)."""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMEOUT_S = 20.0


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)


def exchange(port: int, data: bytes, *, timeout: float = TIMEOUT_S,
             half_close: bool = False) -> bytes:
    """Send `data`, then read until the server closes (or `timeout`): every byte it sent.
    `half_close`: shut our side after sending (aiohttp then closes without answering)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer and close before it took everything: read that
        out = bytearray()
        while True:
            try:
                part = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not part:
                break
            out += part
        return bytes(out)


def parse_all(raw: bytes) -> list[RawResponse]:
    """Every response in `raw` (pipelined answers), in order; ValueError on malformed bytes."""
    out = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError(f"no end of headers in {raw[:200]!r}")
        lines = head.decode("latin-1").split("\r\n")
        version, status, *_reason = lines[0].split(" ", 2)
        # aiohttp answers in the request's version (HTTP/0.9 too): any HTTP/<d>.<d>
        if not re.fullmatch(r"HTTP/\d\.\d", version) or not re.fullmatch(r"\d{3}", status):
            raise ValueError(f"bad status line {lines[0]!r}")
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise ValueError(f"bad header line {line!r}")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            n = int(headers["content-length"])
            body, raw = rest[:n], rest[n:]
        elif headers.get("transfer-encoding") == "chunked":
            body, raw = _dechunk(rest)
        else:
            body, raw = rest, b""
        out.append(RawResponse(int(status), headers, body))
    return out


def _dechunk(data: bytes) -> tuple[bytes, bytes]:
    body = bytearray()
    while True:
        size_line, sep, data = data.partition(b"\r\n")
        if not sep:
            return bytes(body), b""  # cut off (a stream the server ended)
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(body), data.partition(b"\r\n")[2]
        body += data[:size]
        data = data[size + 2:]


def request(port: int, method: str, path: str, body: bytes = b"",
            headers: dict[str, str] | None = None) -> RawResponse:
    """One well-formed request with `Connection: close`; its one response."""
    given = {"Host": f"127.0.0.1:{port}", "Connection": "close", **(headers or {})}
    if body or method == "POST":
        given["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in given.items())
    responses = parse_all(exchange(port, head.encode("latin-1") + b"\r\n" + body))
    assert len(responses) == 1, responses
    return responses[0]


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads in /proc/PID/status")
