"""`edged ha show|remove`: the Home Assistant device config this daemon publishes, printed; or the
empty retained payload that makes Home Assistant forget the device (and all its entities).

`remove` connects with the config's broker settings under its own client id (never the daemon's:
that would take over the daemon's session), publishes, and waits for the broker's PUBACK. A
running daemon with `homeassistant.discovery: true` announces the device again on its next
connect: set it to false first (the daemon then removes the device itself at start).
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from ..config import Config
from ..homeassistant.discovery import Discovery, build_discovery
from ..mqtt import set_credentials
from ..voice import VoiceError, find_voice
from .common import DEFAULT_CONFIG, CommandError, Subparsers, add_config_argument, config_from_args

_TIMEOUT_S = 10.0


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("ha", help="Home Assistant: show the device config, or remove the device",
                       description="show: print the MQTT discovery config edged publishes. "
                                   "remove: publish the empty retained config that removes the "
                                   "device and its entities from Home Assistant.")
    p.add_argument("action", choices=("show", "remove"))
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args, DEFAULT_CONFIG)
    discovery = build_discovery(config, _voice_names(config))
    if args.action == "show":
        print(discovery.topic)
        print(json.dumps(discovery.payload, indent=2, ensure_ascii=False))
        return 0
    _publish_removal(config, discovery)
    print(f"edged: removed device {config.device_id!r} from Home Assistant ({discovery.topic})")
    return 0


def _voice_names(config: Config) -> list[str]:
    """The select's options as the daemon offers them, without loading a voice."""
    try:
        own = find_voice(config.voice.name, config.voice.dirs).name.removesuffix(".onnx")
    except VoiceError:
        own = config.voice.name
    return list(dict.fromkeys([own, *config.voices]))


def _publish_removal(config: Config, discovery: Discovery) -> None:
    done = threading.Event()
    failure: list[str] = []
    client = paho.Client(CallbackAPIVersion.VERSION2,
                         client_id=f"{config.client_id}-ha-{uuid.uuid4().hex[:6]}",
                         protocol=MQTTProtocolVersion.MQTTv5)
    set_credentials(client, config)

    def on_connect(c: paho.Client, _u: Any, _f: Any, rc: Any, _p: Any) -> None:
        if rc.is_failure:
            failure.append(f"the broker refused the connection: {rc}")
            done.set()
            return
        c.publish(discovery.topic, b"", qos=1, retain=True)

    client.on_connect = on_connect
    client.on_publish = lambda *_a: done.set()
    try:
        client.connect(config.mqtt.host, config.mqtt.port, keepalive=config.mqtt.keepalive_s)
    except OSError as err:
        raise CommandError(f"cannot connect to mqtt://{config.mqtt.host}:{config.mqtt.port}: "
                           f"{err.strerror or err}") from None
    client.loop_start()
    try:
        if not done.wait(_TIMEOUT_S):
            failure.append(f"no answer from the broker within {_TIMEOUT_S:g} s")
    finally:
        client.disconnect()
        client.loop_stop()
    if failure:
        raise CommandError(failure[0])
