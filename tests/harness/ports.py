"""Free loopback ports, and waiting for one to open."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 5.0, proc: subprocess.Popen | None = None) -> None:
    """Until something listens on loopback `port`; RuntimeError if `proc` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            name = Path(str(proc.args[0] if isinstance(proc.args, list) else proc.args)).name
            raise RuntimeError(f"{name} exited early rc={proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)  # polling a port: there is no event to wait on
    raise TimeoutError(f"port {port} did not open")
