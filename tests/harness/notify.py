"""The service manager's end of NOTIFY_SOCKET, for tests of sd_notify without systemd: every
datagram with its sender's PID (SCM_CREDENTIALS), the way systemd checks NotifyAccess=main."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_TIMEOUT_S = 15.0


@dataclass
class Datagram:
    at: float
    pid: int
    fields: dict[str, str]


class NotifyListener:
    """The service manager's end of NOTIFY_SOCKET: records every datagram with its sender PID."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)  # lets the reader notice close()
        self.got: list[Datagram] = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        creds_len = socket.CMSG_SPACE(struct.calcsize("3i"))
        while not self._closed:
            try:
                data, anc, _flags, _addr = self.sock.recvmsg(4096, creds_len)
            except TimeoutError:
                continue
            except OSError:
                return
            pid = -1
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("3i", raw[: struct.calcsize("3i")])[0]
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if line)
            with self._cond:
                self.got.append(Datagram(time.monotonic(), pid, fields))
                self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self.got)

    def wait(self, pred: Callable[[Datagram], bool], start: int = 0,
             timeout: float = _TIMEOUT_S) -> int:
        """Index of the first datagram from `start` on that matches; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in range(start, len(self.got)):
                    if pred(self.got[i]):
                        return i
                left = deadline - time.monotonic()
                if left <= 0:
                    tail = [d.fields for d in self.got[-6:]]
                    raise AssertionError(f"no matching datagram in {timeout} s; last: {tail}")
                self._cond.wait(left)

    def wait_key(self, key: str, start: int = 0, timeout: float = _TIMEOUT_S) -> int:
        return self.wait(lambda d: key in d.fields, start, timeout)

    def pings(self, start: int = 0, end: int | None = None) -> list[float]:
        with self._cond:
            return [d.at for d in self.got[start:end] if "WATCHDOG" in d.fields]

    def close(self) -> None:
        self._closed = True
        self._thread.join(2)
        self.sock.close()
