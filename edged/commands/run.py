"""`edged run`: the MQTT daemon, with systemd notification, signals and config reload.

Start-up problems fail fast with one line (voice missing, no audio device for `output: play`,
unreadable password file); a broker that is down is not a start-up problem: the daemon starts
and connects when it can. `--private-broker-if-needed` (what `make run` uses) starts a private
mosquitto on the configured loopback port when nothing answers there.

Signals: SIGTERM/SIGINT finish the current announcement (up to limits.stop_timeout_s) and
exit 0, leaving unfinished requests to the broker for redelivery. SIGHUP re-reads the config
and runs the checks a start runs (checks.run_checks, with the same --output): when they pass,
the daemon stops the same way and re-executes itself (same PID, so systemd sees RELOADING=1
then READY=1); when they do not, or anything at all goes wrong while checking, the running
daemon carries on and says why: the log, systemd's STATUS= and `reload_error` in <p>/state.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import threading
from types import FrameType
from typing import Literal, TypeAlias

from ..config import Config, ConfigError, load_config
from ..notify import Notifier
from ..voice import VoiceError
from . import private_broker
from .common import (
    DEFAULT_CONFIG,
    CommandError,
    Subparsers,
    add_config_argument,
    config_from_args,
    one_line,
)

_LOGGER = logging.getLogger(__name__)
_SIGNAL_CHECK_S = 0.5
"""How often the main thread looks for a signal that arrived while it waited."""
Output: TypeAlias = Literal["play", "publish", "both"]


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "run", help="run the MQTT daemon (announcements in, events and audio out)",
        description="Run the daemon. Uses config/edged.yaml when --config is not given and "
                    "that file exists.",
    )
    add_config_argument(p)
    p.add_argument("--private-broker-if-needed", action="store_true",
                   help="when no MQTT broker answers at mqtt.host:mqtt.port (a loopback "
                        "address), start a private mosquitto there for this run")
    p.add_argument("--output", choices=("play", "publish", "both"),
                   help="override the config's `output` (e.g. publish on a machine without a "
                        "sound card)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args, DEFAULT_CONFIG)
    if args.output:
        config = dataclasses.replace(config, output=args.output)
    if not getattr(args, "debug", False):
        logging.getLogger().setLevel(config.log_level.upper())
    if args.private_broker_if_needed:
        # Until serve() takes the signals over (a first start prepares the voice for seconds),
        # a stop still ends in the `finally` below: the default action would leave the
        # private broker running.
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _exit_quietly)
    broker = private_broker.adopt_or_start(config) if args.private_broker_if_needed else None
    reload = False
    try:
        reload = serve(config, args.output)
    finally:
        if broker is not None and not reload:
            private_broker.stop(broker)
    if reload:
        _LOGGER.warning("Reloading: re-executing with the new config")
        os.execv(sys.executable, [sys.executable, "-m", "edged", *sys.argv[1:]])
    return 0


def _exit_quietly(_signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def serve(config: Config, output: Output | None = None) -> bool:
    """Run until SIGTERM/SIGINT (returns False) or a valid SIGHUP reload (returns True).
    `output`: the --output override, applied to a reloaded config as the new process will."""
    from ..assembly import StartError, assemble

    notifier = Notifier()
    try:
        app = assemble(config, notifier.status)
    except (VoiceError, StartError) as err:
        raise CommandError(f"voice: {err}" if isinstance(err, VoiceError) else str(err)) from None
    wake = threading.Event()
    why: list[str] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        why.append("reload" if signum == signal.SIGHUP else "stop")
        wake.set()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        app.start(defer=True)
    except StartError as err:  # a network server that cannot listen (its port is taken, ...)
        raise CommandError(str(err)) from None
    notifier.ready("idle")
    _LOGGER.info("edged %s ready: send text to %s", config.device_id, app.daemon.link.topics.say)
    notifier.start_watchdog(lambda: app.daemon.heartbeat, config.limits.heartbeat_max_age_s)
    try:
        app.start_later()  # the HTTP server: its imports cost more than the rest of a start
    except StartError as err:  # everything was stopped
        notifier.stopping()
        raise CommandError(str(err)) from None
    reload = False
    while not reload:
        # A timed wait: Python runs a signal handler in the main thread only, and a signal the
        # kernel hands to another thread (seen under a tracer) would not end an untimed wait.
        if not wake.wait(_SIGNAL_CHECK_S):
            continue
        wake.clear()
        if "stop" in why:
            break
        why.clear()
        problem = reload_problem(config, output)
        if problem is None:
            reload = True
        else:
            _LOGGER.error("Reload refused, keeping the running config: %s", problem)
            app.daemon.reload_refused(problem)
    if reload:
        notifier.reloading()
    else:
        notifier.stopping()
    _LOGGER.info("Stopping (%s)", "reload" if reload else "signal")
    app.stop()
    notifier.close()
    return reload


def ports_problems(running: Config, new: Config) -> list[str]:
    """The network servers' new addresses that cannot be had (one in use by another program):
    the new process would exit at start, leaving no daemon. An address the running daemon holds
    is its own. HTTP left at its defaults runs without HTTP on a port in use (as at start)."""
    from ..net.listen import bind

    problems = []
    servers = (("http", running.http, new.http, new.http.enabled_given),
               ("wyoming", running.wyoming, new.wyoming, True))
    for key, old, server, fatal in servers:
        address = (server.host, server.port)
        if not server.enabled or not fatal or server.port == 0 or (
                old.enabled and (old.host, old.port) == address):
            continue
        try:
            bind(*address).close()
        except OSError as err:
            problems.append(f"{key}.port: cannot listen on {server.host}:{server.port}: "
                            f"{err.strerror or err}")
    return problems


def reload_problem(running: Config, output: Output | None = None) -> str | None:
    """Why the config file cannot replace the running one (None: it can), from the checks a
    start makes. The audio device is probed only when the new config changes how it is used:
    the running player may hold it open."""
    from ..checks import run_checks

    if running.source is None:
        return None
    try:
        new = load_config(running.source)
        if output:
            new = dataclasses.replace(new, output=output)
        device = (new.output, new.audio.device, new.audio.rate_hz) != (
            running.output, running.audio.device, running.audio.rate_hz)
        problems = run_checks(new, device=device) + ports_problems(running, new)
    except ConfigError as err:
        problems = [str(err)]
    except Exception as err:  # a check that breaks must never take the running daemon along
        _LOGGER.exception("Checking the new config failed")
        problems = [f"checking the new config failed: {type(err).__name__}: {err}"]
    return one_line("; ".join(problems)) if problems else None
