"""sd_notify for systemd: READY, STATUS, RELOADING, STOPPING and a heartbeat-gated watchdog.

Without `NOTIFY_SOCKET` (run by hand, in tests, under another supervisor) every method is a
no-op. The watchdog only pings while the caller's heartbeat is fresh: a timer that pinged
regardless would keep a hung daemon alive for ever, which is exactly what WatchdogSec= is
there to catch.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

import sdnotify

_LOGGER = logging.getLogger(__name__)
_STOPPED = "watchdog: worker hung"
_RESUMED = "watchdog: worker healthy again"


class Notifier:
    """Talks to the service manager named by `NOTIFY_SOCKET`, if any. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._systemd: sdnotify.SystemdNotifier | None = None
        self._connected = False
        self._send_failed = False
        self._closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.watchdog_interval_s: float | None = None
        """Seconds between WATCHDOG=1 pings (WATCHDOG_USEC / 2); None while no watchdog runs."""

    @property
    def enabled(self) -> bool:
        """True when a service manager listens (NOTIFY_SOCKET is set)."""
        return not self._closed and bool(os.environ.get("NOTIFY_SOCKET"))

    # ------------------------------------------------------------------ messages
    def status(self, text: str, *, busy_s: float | None = None) -> None:
        """Free-form status line shown by `systemctl status`. `busy_s`: what comes next may take
        that long (preparing a voice: minutes on a Pi Zero 2 W), so systemd's start timeout
        (TimeoutStartSec=120) is extended by it (EXTEND_TIMEOUT_USEC) rather than killing a
        first start that is still preparing."""
        extend = f"\nEXTEND_TIMEOUT_USEC={int(busy_s * 1e6)}" if busy_s else ""
        self._send(f"STATUS={_one_line(text)}{extend}")

    def ready(self, status: str | None = None) -> None:
        """Start-up is complete: `systemctl start` returns, the watchdog clock starts."""
        self._send("READY=1" + (f"\nSTATUS={_one_line(status)}" if status else ""))

    def reloading(self) -> None:
        """A reload (SIGHUP) has begun; call `ready()` when it is done.

        MONOTONIC_USEC is required by Type=notify-reload (systemd 253+) and ignored by 252.
        """
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._send(f"RELOADING=1\nMONOTONIC_USEC={usec}")

    def stopping(self) -> None:
        """Shutdown has begun."""
        self._send("STOPPING=1")

    # ------------------------------------------------------------------ watchdog
    def start_watchdog(self, heartbeat: Callable[[], float], max_age_s: float) -> bool:
        """Ping WATCHDOG=1 every WATCHDOG_USEC/2 while `time.monotonic() - heartbeat()` is
        below `max_age_s`. Returns False (and starts nothing) when systemd asked for no
        watchdog, or asked it of another process (WATCHDOG_PID)."""
        if not self.enabled or self._thread is not None:
            return False
        interval_s = _watchdog_interval_s()
        if interval_s is None:
            return False
        self.watchdog_interval_s = interval_s
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._watch, args=(heartbeat, max_age_s, interval_s),
            name="edged-watchdog", daemon=True,
        )
        self._thread.start()
        _LOGGER.info("Watchdog: pinging every %.3f s while the heartbeat is < %.1f s old",
                      interval_s, max_age_s)
        return True

    def _watch(self, heartbeat: Callable[[], float], max_age_s: float, interval_s: float) -> None:
        stale = False
        while True:
            try:
                age_s = time.monotonic() - heartbeat()
            except Exception:  # a broken heartbeat is an unhealthy daemon, not a crash here
                _LOGGER.exception("Watchdog: heartbeat callback failed")
                age_s = float("inf")
            if age_s < max_age_s:
                if stale:
                    _LOGGER.warning("Watchdog: worker heartbeat is fresh again; pings resumed")
                    self.status(f"{_RESUMED}; watchdog pings resumed")
                    stale = False
                self._send("WATCHDOG=1")
            elif not stale:
                stale = True
                message = (f"worker heartbeat is {age_s:.1f} s old (limit {max_age_s:.1f} s); "
                           "stopped pinging so the service manager restarts edged")
                _LOGGER.warning("Watchdog: %s", message)
                # Also where `systemctl status` shows it: why the watchdog is about to fire.
                self.status(f"{_STOPPED}: {message}")
            if self._stop.wait(interval_s):
                return

    def close(self) -> None:
        """Stop the watchdog thread and close the socket; later calls send nothing."""
        self._closed = True
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self.watchdog_interval_s = None
        with self._lock:
            sock = getattr(self._systemd, "socket", None)
            if sock is not None:
                sock.close()
            self._systemd, self._connected = None, False

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing
    def _send(self, message: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            if not self._connected:
                # sdnotify reads NOTIFY_SOCKET and connects once, in its constructor: make it
                # only now, after the environment is final. debug=True: errors reach us.
                self._connected = True
                try:
                    self._systemd = sdnotify.SystemdNotifier(debug=True)
                except OSError as err:
                    _LOGGER.warning("sd_notify: cannot connect to NOTIFY_SOCKET %s: %s",
                                    os.environ.get("NOTIFY_SOCKET"), err)
                    self._systemd = None
            if self._systemd is None:
                return
            try:
                self._systemd.notify(message)
            except OSError as err:
                # Logged once: a manager that went away would otherwise flood the log.
                log = _LOGGER.debug if self._send_failed else _LOGGER.warning
                log("sd_notify: sending %r failed: %s", message.split("=", 1)[0], err)
                self._send_failed = True


def _watchdog_interval_s() -> float | None:
    pid = os.environ.get("WATCHDOG_PID")
    if pid and pid.strip() != str(os.getpid()):
        return None  # the watchdog is meant for another process (we are a child of it)
    try:
        usec = int(os.environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 2e6 if usec > 0 else None


def _one_line(text: str) -> str:
    # A newline would start a new KEY=VALUE assignment in the datagram.
    return " ".join(str(text).split())
