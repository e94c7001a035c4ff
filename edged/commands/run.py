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
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Final

from ..config import Config, ConfigError, load_config
from ..notify import Notifier
from ..voice import VoiceError
from .common import DEFAULT_CONFIG, CommandError, add_config_argument, config_from_args

_LOGGER = logging.getLogger(__name__)
_BROKER_PID_ENV: Final = "EDGED_PRIVATE_BROKER_PID"
_LOOPBACK: Final = ("localhost", "127.0.0.1", "::1")


def add_parser(sub: argparse._SubParsersAction) -> None:
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
    broker = _adopt_or_start_broker(config) if args.private_broker_if_needed else None
    reload = False
    try:
        reload = serve(config)
    finally:
        if broker is not None and not reload:
            _stop_broker(broker)
    if reload:
        _LOGGER.warning("Reloading: re-executing with the new config")
        os.execv(sys.executable, [sys.executable, "-m", "edged", *sys.argv[1:]])
    return 0


def serve(config: Config) -> bool:
    """Run until SIGTERM/SIGINT (returns False) or a valid SIGHUP reload (returns True)."""
    from ..cache import PhraseCache, expand_phrases
    from ..checks import ensure_ready
    from ..daemon import Daemon
    from ..donelog import DoneLog
    from ..mqtt import Topics
    from ..voices import default_settings, load_voice

    ensure_ready(config)  # ConfigError naming the key or file: voice, folders, secrets, memory
    phrases = expand_phrases(config.cache.phrases, config.cache.max_expansions)
    Topics(config.topic_prefix)  # ConfigError now, not after the voice has loaded
    notifier = Notifier()
    notifier.status("loading voice")
    try:
        voice = load_voice(config, status=notifier.status)
        settings = default_settings(config, voice)
        start = time.monotonic()
        voice.synthesize("Ready.", settings)  # first inference: allocations, lazy init
    except VoiceError as err:
        raise CommandError(f"voice: {err}") from None
    _LOGGER.info("Voice %s warmed up in %.0f ms", voice.name, 1000 * (time.monotonic() - start))
    player = _open_player(config)
    done = DoneLog(config.mqtt.state_dir / "done.jsonl", window_s=config.mqtt.session_expiry_s)
    cache = PhraseCache(config.cache)
    daemon = Daemon(config, voice=voice, cache=cache, done=done, player=player,
                    status=notifier.status)

    wake = threading.Event()
    why: list[str] = []

    def on_signal(signum: int, _frame: Any) -> None:
        why.append("reload" if signum == signal.SIGHUP else "stop")
        wake.set()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    daemon.start()
    notifier.ready("idle")
    notifier.start_watchdog(lambda: daemon.heartbeat, config.limits.heartbeat_max_age_s)
    _LOGGER.info("edged %s ready: send text to %s", config.device_id, daemon.link.topics.say)
    if phrases:
        threading.Thread(target=_warm_pinned, args=(cache, voice, settings, phrases),
                         name="edged-warm", daemon=True).start()

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
    daemon.stop()
    if player is not None:
        player.close()
    notifier.close()
    return reload


def _warm_pinned(cache: Any, voice: Any, settings: Any, phrases: list[str]) -> None:
    """Pin cache.phrases and synthesize the missing ones, beside the speaker thread.

    Normally `edged cache build` made them all ahead of time and this only checks files;
    on a fresh install the daemon is ready at once and the phrases arrive in the background.
    """
    try:
        report = cache.warm(voice, settings, phrases)
    except Exception:  # the cache is an optimisation; never a reason to stop speaking
        _LOGGER.exception("Warming the pinned phrases failed")
        return
    _LOGGER.info("Pinned phrases: %d, %d already cached, %d synthesized, %d failed, %.1f s",
                 report.total, report.present, report.synthesized, len(report.failed),
                 report.elapsed_s)


def _reload_ok(config: Config) -> bool:
    """Validate the config file (and its voice) before giving up the running daemon."""
    from ..voices import find_voice

    if config.source is None:
        return True
    from ..cache import expand_phrases

    try:
        new = load_config(config.source)
        find_voice(new.voice.name, new.voice.dirs)
        expand_phrases(new.cache.phrases, new.cache.max_expansions)
    except (ConfigError, VoiceError) as err:
        _LOGGER.error("Reload refused, keeping the running config: %s", err)
        return False
    return True


def _open_player(config: Config) -> Any:
    if config.output not in ("play", "both"):
        return None
    from ..player import Player, PlayerError

    player = Player(config.audio)
    try:
        player.check_device()
    except PlayerError as err:
        if config.audio.fallback_to_publish:
            _LOGGER.warning("audio: %s; announcements are published on MQTT until a device "
                            "works (audio.fallback_to_publish)", err)
            return player
        raise CommandError(
            f"audio: {err} (output is {config.output!r}; use output: publish on a device "
            "without a sound card)"
        ) from None
    return player


# -- a private broker for `make run` -------------------------------------------------------


def _broker_answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _adopt_or_start_broker(config: Config) -> int | None:
    """The pid of a private mosquitto this run owns, or None when a broker already answers."""
    host, port = config.mqtt.host, config.mqtt.port
    inherited = os.environ.get(_BROKER_PID_ENV)
    if _broker_answers(host, port):
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
    proc = subprocess.Popen([mosquitto, "-c", str(conf)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # Ctrl-C reaches us, and we stop it
    deadline = time.monotonic() + 5.0
    while not _broker_answers(host, port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise CommandError(f"could not start a private mosquitto on {host}:{port}; see "
                               f"{workdir}/mosquitto.log")
        time.sleep(0.05)  # polling a port: there is no event to wait on
    os.environ[_BROKER_PID_ENV] = str(proc.pid)
    prefix = config.topic_prefix
    print(f"edged: no MQTT broker answered at {host}:{port}, so a private mosquitto was started "
          f"for this run (pid {proc.pid}, data in {workdir}).\nedged: make it speak with:  "
          f"mosquitto_pub -h {host} -p {port} -q 1 -t '{prefix}/say' -m 'Hello from edged'",
          file=sys.stderr, flush=True)
    return proc.pid


def _stop_broker(pid: int) -> None:
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
