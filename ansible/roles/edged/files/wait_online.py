"""Wait until edged on this device says "online" on <topic_prefix>/availability.

The Ansible role runs this on the device with the edged venv's python after a (re)start,
so a rolling update moves on only when the daemon is really back. Broker, TLS, user and
password file come from the deployed config, read with edged's own loader.
Exit status 0: online; 1: not online before the timeout, or the broker refused us.
"""

from __future__ import annotations

import argparse
import ssl
import sys
import threading

import paho.mqtt.client as mqtt

from edged.config import Config, ConfigError, load_config


def _client(config: Config) -> mqtt.Client:
    # Never the daemon's own client id: the broker would disconnect the daemon.
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id=f"{config.client_id}-deploy-check"
    )
    mq = config.mqtt
    if mq.username:
        password = None
        if mq.password_file:
            password = mq.password_file.read_text(encoding="utf-8").rstrip("\r\n")
        client.username_pw_set(mq.username, password)
    if mq.tls.ca_file or mq.tls.cert_file:
        context = ssl.create_default_context(
            cafile=str(mq.tls.ca_file) if mq.tls.ca_file else None
        )
        if mq.tls.cert_file:
            context.load_cert_chain(
                str(mq.tls.cert_file), str(mq.tls.key_file) if mq.tls.key_file else None
            )
        client.tls_set_context(context)
    return client


def wait_online(config: Config, timeout_s: float) -> tuple[bool, str]:
    """(online?, what was last seen) after at most timeout_s."""
    topic = f"{config.topic_prefix}/availability"
    online = threading.Event()
    seen = {"state": f"nothing on {topic}"}

    def on_connect(client, userdata, flags, reason_code, properties):  # noqa: ANN001
        if reason_code.is_failure:
            seen["state"] = f"broker refused the connection: {reason_code}"
            return
        client.subscribe(topic, qos=1)

    def on_message(client, userdata, msg):  # noqa: ANN001
        payload = msg.payload[:64].decode("utf-8", "replace").strip()
        seen["state"] = f"{topic} is {payload!r}"
        if payload == "online":
            online.set()

    def on_connect_fail(client, userdata):  # noqa: ANN001
        seen["state"] = f"cannot reach the broker {config.mqtt.host}:{config.mqtt.port}"

    client = _client(config)
    client.on_connect = on_connect
    client.on_connect_fail = on_connect_fail
    client.on_message = on_message
    client.connect_async(config.mqtt.host, config.mqtt.port, keepalive=config.mqtt.keepalive_s)
    client.loop_start()
    try:
        ok = online.wait(timeout_s)
    finally:
        client.disconnect()
        client.loop_stop()
    return ok, seen["state"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    try:
        config = load_config(args.config)
        ok, state = wait_online(config, args.timeout)
    except (ConfigError, OSError, ssl.SSLError) as err:
        print(f"wait-online: {err}", file=sys.stderr)
        return 1
    if ok:
        print(f"{config.device_id}: online")
        return 0
    print(f"{config.device_id}: not online after {args.timeout:g} s ({state})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
