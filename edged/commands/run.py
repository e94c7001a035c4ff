"""`edged run`: the MQTT daemon, with systemd notification, signals and config reload.

Start-up problems fail fast with one line (voice missing, no audio device for `output: play`,
unreadable password file); a broker that is down is not a start-up problem: the daemon starts
and connects when it can. `--private-broker-if-needed` (what `make run` uses) starts a private
mosquitto on the configured loopback port when nothing answers there.

Signals: SIGTERM/SIGINT finish the current announcement (up to limits.stop_timeout_s) and
exit 0, leaving unfinished requests to the broker for redelivery. SIGHUP re-reads the config:
when it is valid the daemon stops the same way and re-executes itself (same PID, so systemd
sees RELOADING=1 then READY=1); when it is not, the error is logged and nothing changes.
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

from ..config import Config, ConfigError, load_config
from ..notify import Notifier
from ..voice import VoiceError
from . import private_broker
from .common import DEFAULT_CONFIG, CommandError, Subparsers, add_config_argument, config_from_args

_LOGGER = logging.getLogger(__name__)


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
    broker = private_broker.adopt_or_start(config) if args.private_broker_if_needed else None
    reload = False
    try:
        reload = serve(config)
    finally:
        if broker is not None and not reload:
            private_broker.stop(broker)
    if reload:
        _LOGGER.warning("Reloading: re-executing with the new config")
        os.execv(sys.executable, [sys.executable, "-m", "edged", *sys.argv[1:]])
    return 0


def serve(config: Config) -> bool:
    """Run until SIGTERM/SIGINT (returns False) or a valid SIGHUP reload (returns True)."""
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
        app.start()
    except StartError as err:  # a network server that cannot listen (its port is taken, ...)
        raise CommandError(str(err)) from None
    notifier.ready("idle")
    notifier.start_watchdog(lambda: app.daemon.heartbeat, config.limits.heartbeat_max_age_s)
    _LOGGER.info("edged %s ready: send text to %s", config.device_id, app.daemon.link.topics.say)
    reload = False
    while not reload:
        wake.wait()
        wake.clear()
        if "stop" in why:
            break
        why.clear()
        reload = _reload_ok(config)
    if reload:
        notifier.reloading()
    else:
        notifier.stopping()
    _LOGGER.info("Stopping (%s)", "reload" if reload else "signal")
    app.stop()
    notifier.close()
    return reload


def _reload_ok(config: Config) -> bool:
    """Check the config file, and everything it names, as a start would, before giving up the
    running daemon; a config that would not start is refused and the daemon runs on."""
    from ..cache import expand_phrases
    from ..checks import run_checks

    if config.source is None:
        return True
    try:
        new = load_config(config.source)
        expand_phrases(new.cache.phrases, new.cache.max_expansions)
    except ConfigError as err:
        _LOGGER.error("Reload refused, keeping the running config: %s", err)
        return False
    problems = run_checks(new)
    if problems:
        _LOGGER.error("Reload refused, keeping the running config: %s", "; ".join(problems))
        return False
    return True
