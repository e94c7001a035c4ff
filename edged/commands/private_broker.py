"""A private mosquitto for `make run` (`edged run --private-broker-if-needed`): started when no
broker answers on the configured loopback address, stopped when the daemon stops for good.

After a reload the daemon re-executes itself; the broker it started stays its own, found again
through EDGED_PRIVATE_BROKER_PID. A daemon killed outright (SIGKILL, the OOM killer) takes its
broker with it (`lifetime`): left running, the next `make run` would find it answering and use
it without owning it.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

from ..config import Config
from ..lifetime import signal_when_parent_dies
from .common import CommandError

_LOGGER = logging.getLogger(__name__)
_BROKER_PID_ENV: Final = "EDGED_PRIVATE_BROKER_PID"
_LOOPBACK: Final = ("localhost", "127.0.0.1", "::1")

_SYSTEMD_ENV: Final = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID")

def answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def adopt_or_start(config: Config) -> int | None:
    """The pid of a private mosquitto this run owns, or None when a broker already answers."""
    host, port = config.mqtt.host, config.mqtt.port
    inherited = os.environ.get(_BROKER_PID_ENV)
    if answers(host, port):
        # After a reload (re-exec) the private broker started before it is still ours.
        return int(inherited) if inherited and inherited.isdigit() else None
    if host not in _LOOPBACK:
        _LOGGER.warning("No MQTT broker answers at %s:%d; not a loopback address, so no private "
                        "broker is started. Retrying until it answers.", host, port)
        return None
    if config.mqtt.tls.ca_file or config.mqtt.tls.cert_file:
        raise CommandError(f"no MQTT broker answers at {host}:{port}, and a private broker "
                           "cannot stand in for one that uses TLS")
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(mosquitto).is_file():
        raise CommandError(f"no MQTT broker answers at {host}:{port} and mosquitto is not "
                           "installed (apt install mosquitto)")
    workdir = config.mqtt.state_dir.resolve() / "mosquitto"
    workdir.mkdir(parents=True, exist_ok=True)
    conf = workdir / "mosquitto.conf"
    conf.write_text(
        ("user root\n" if os.geteuid() == 0 else "")
        + f"listener {port} {'::1' if host == '::1' else '127.0.0.1'}\nallow_anonymous true\n"
        f"persistence true\npersistence_location {workdir}/\nautosave_interval 30\n"
        f"log_dest file {workdir}/mosquitto.log\nset_tcp_nodelay true\n"
    )
    # Not systemd's child: mosquitto would say READY=1 on edged's notify socket before edged is.
    env = {k: v for k, v in os.environ.items() if k not in _SYSTEMD_ENV}
    proc = subprocess.Popen([mosquitto, "-c", str(conf)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True,  # Ctrl-C reaches us, and we stop it
                            preexec_fn=functools.partial(_tied_to, os.getpid()))
    deadline = time.monotonic() + 5.0
    try:
        while not answers(host, port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise CommandError(f"could not start a private mosquitto on {host}:{port}; "
                                   f"see {workdir}/mosquitto.log")
            time.sleep(0.05)  # polling a port: there is no event to wait on
    except BaseException:  # that error, or a stop meanwhile: it is not left running
        proc.kill()
        proc.wait()
        raise
    os.environ[_BROKER_PID_ENV] = str(proc.pid)
    prefix = config.topic_prefix
    print(f"edged: no MQTT broker answered at {host}:{port}, so a private mosquitto was started "
          f"for this run (pid {proc.pid}, data in {workdir}).\nedged: make it speak with:  "
          f"mosquitto_pub -h {host} -p {port} -q 1 -t '{prefix}/say' -m 'Hello from edged'",
          file=sys.stderr, flush=True)
    return proc.pid


def _tied_to(daemon: int) -> None:
    """In the forked child before mosquitto runs: SIGTERM (mosquitto saves its sessions) when
    the daemon dies without stopping it, SIGKILLed say. Only a system call is made here
    (see `lifetime`: nothing is looked up after the fork)."""
    if not signal_when_parent_dies(signal.SIGTERM, daemon):
        os._exit(1)


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)  # SIGTERM: mosquitto saves its sessions first
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # not our child (adopted after a reload by a parent that died)
        if done:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
