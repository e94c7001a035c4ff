"""Stand-in for `edged run`, started by a real `systemd --user` in tests/test_systemd_unit.py.

It runs under the real unit's sandbox and reports to the test over an abstract AF_UNIX
datagram socket (abstract names are visible through PrivateTmp and mount namespaces).

  watchdog: READY, then a heartbeat that goes stale after EDGED_TEST_FRESH_S -> the Notifier
            stops pinging -> systemd's watchdog kills us -> Restart= starts us again.
  stack:    the real voice stack (espeak-ng via ctypes, ONNX Runtime, numpy, PortAudio import)
            plus the start-up checks, under MemoryDenyWriteExecute & co; reports what worked.
"""

from __future__ import annotations

import json
import mmap
import os
import signal
import site
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edged.notify import Notifier


def report(**fields: object) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(json.dumps({"pid": os.getpid(), **fields}).encode(),
                 "\0" + os.environ["EDGED_TEST_REPORT"])


def watchdog_mode(notifier: Notifier) -> None:
    fresh_s = float(os.environ["EDGED_TEST_FRESH_S"])
    started = time.monotonic()
    # The heartbeat a hung worker would leave behind: it stops moving after `fresh_s`.
    notifier.ready("idle")
    notifier.start_watchdog(lambda: min(time.monotonic(), started + fresh_s), max_age_s=0.3)
    report(event="ready", watchdog_usec=os.environ.get("WATCHDOG_USEC"),
           notify_socket=os.environ.get("NOTIFY_SOCKET"))
    signal.pause()  # the "hung worker": systemd's watchdog ends this


# -- what the stack mode probes inside the sandbox --------------------------------------

def _probe_synthesize() -> object:
    from edged.voice import PiperVoice

    voice = PiperVoice.load(os.environ["EDGED_TEST_VOICE"])
    audio = voice.synthesize("Test one.")
    return {"samples": len(audio.samples), "rate": audio.rate_hz}

def _probe_portaudio() -> object:
    import sounddevice

    return sounddevice.get_portaudio_version()[1]

def _probe_write_in(var: str) -> object:
    path = os.path.join(os.environ[var], "probe")
    with open(path, "w") as f:
        f.write("x")
    os.unlink(path)
    return "ok"

def _probe_write_var_lib() -> object:
    try:  # mkstemp + unlink: nothing is left behind even if the sandbox were missing
        fd, name = tempfile.mkstemp(dir="/var/lib", prefix=".edged-test-")
    except OSError as err:
        return f"refused: {err.strerror}"
    os.close(fd)
    os.unlink(name)
    return "WRITABLE"

def _probe_write_exec_memory() -> object:
    try:
        mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except OSError as err:
        return f"refused: {err.strerror}"
    return "ALLOWED"

def _probe_sandbox_status() -> object:
    lines = Path("/proc/self/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)
            if k in ("NoNewPrivs", "Seccomp", "CapEff", "CapBnd")}

def _probe_network() -> object:
    # The MQTT broker: name resolution (AI_ADDRCONFIG asks the kernel over netlink, which
    # RestrictAddressFamilies= refuses: glibc must cope) and a TCP connection.
    infos = socket.getaddrinfo("localhost", None, flags=socket.AI_ADDRCONFIG)
    port = int(os.environ["EDGED_TEST_TCP_PORT"])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"edged")
    return {"resolved": bool(infos), "tcp": "ok"}

def _probe_home_hidden() -> object:
    return sorted(os.listdir("/root"))

def _probe_checks() -> object:
    from edged import checks
    from edged.config import parse_config

    base = os.environ["CONFIGURATION_DIRECTORY"]
    ok = parse_config({"voice": {"name": os.environ["EDGED_TEST_VOICE"]},
                       "cache": {"dir": os.environ["CACHE_DIRECTORY"]},
                       "mqtt": {"state_dir": os.environ["STATE_DIRECTORY"]}}, base_dir=base)
    # /var/lib is read-only under ProtectSystem=strict (edged must use $CACHE_DIRECTORY).
    ro = parse_config({"voice": {"name": os.environ["EDGED_TEST_VOICE"]},
                       "cache": {"dir": "/var/lib/edged-test-cache"},
                       "mqtt": {"state_dir": os.environ["STATE_DIRECTORY"]}}, base_dir=base)
    return {"good": checks.run_checks(ok, create_dirs=True),
            "read_only": checks.run_checks(ro)}


def stack_mode(notifier: Notifier) -> None:
    results: dict[str, object] = {}

    def attempt(name: str, fn: Callable[[], object]) -> None:
        # A C library may abort() the process (PortAudio does on a broken ALSA setup): the
        # log's last line then names the step that did it.
        print(f"stand-in: {name}", file=sys.stderr, flush=True)
        try:
            results[name] = fn()
        except BaseException as err:  # report everything, including seccomp/EPERM failures
            results[name] = f"FAIL {type(err).__name__}: {err}"
            traceback.print_exc()

    notifier.status("checking")
    attempt("synthesize", _probe_synthesize)
    attempt("portaudio", _probe_portaudio)
    attempt("state_dir", lambda: _probe_write_in("STATE_DIRECTORY"))
    attempt("cache_dir", lambda: _probe_write_in("CACHE_DIRECTORY"))
    attempt("var_lib", _probe_write_var_lib)
    attempt("network", _probe_network)
    attempt("home", _probe_home_hidden)
    attempt("write_exec_memory", _probe_write_exec_memory)
    attempt("status", _probe_sandbox_status)
    attempt("checks", _probe_checks)
    notifier.ready("checked")
    report(event="stack", results=results)
    signal.pause()  # stay active until the test stops the unit (SIGTERM)


def main() -> None:
    # The test passes the venv's site-packages: this interpreter may be the system Python because
    # ProtectHome= hides a venv interpreter that lives under /root or /home.
    site.addsitedir(os.environ["EDGED_TEST_SITE"])
    sys.path.insert(0, os.environ["EDGED_TEST_ROOT"])
    from edged.notify import Notifier

    notifier = Notifier()
    notifier.status("starting")
    report(event="start")
    {"watchdog": watchdog_mode, "stack": stack_mode}[sys.argv[1]](notifier)


if __name__ == "__main__":
    main()
