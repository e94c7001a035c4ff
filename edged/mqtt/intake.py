"""What the link subscribes to, and how a received message reaches the daemon.

    <prefix>/say, <prefix>/control                      this device's requests
    <group_prefix>/group/<name>/say (each of `groups`)   a group's requests: every member speaks
    $share/edged-synth/<group_prefix>/synth/say         the synthesis pool (role: synth): the
                                                          broker hands each request to one member
    add_route topics (a second connection: side.py)      integrations (Home Assistant)

Requests are subscribed without retained messages (a retained request would be spoken again on
every resubscribe). A request's MQTT 5 Response Topic and Correlation Data come along in its
`Origin`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from paho.mqtt.subscribeoptions import SubscribeOptions

from ..config import Config

POOL_SHARE: Final = "edged-synth"
"""The shared subscription's group name: every synth daemon of the house joins it."""


@dataclass(frozen=True)
class Ticket:
    """What acknowledging one received QoS 1 message takes."""

    mid: int
    qos: int
    generation: int
    """Session generation: a PUBACK for a session the broker has forgotten must not be sent
    (the same packet id may already name a different message in the new session)."""
    dup: bool


@dataclass(frozen=True)
class Origin:
    """Where a request arrived, and what its MQTT 5 properties ask for its answers."""

    kind: Literal["device", "group", "pool"] = "device"
    group: str | None = None
    response_topic: str | None = None
    correlation: bytes | None = None


class LinkHandler(Protocol):
    def on_say(self, payload: bytes, ticket: Ticket, origin: Origin) -> None: ...
    def on_control(self, payload: bytes, ticket: Ticket) -> None: ...
    def on_connected(self, session_present: bool) -> None: ...


class Subscriptions:
    """The topics of one daemon and where each message goes."""

    def __init__(self, config: Config, say: str, control: str) -> None:
        self.say, self.control = say, control
        prefix = config.mqtt.group_prefix
        self.groups = {f"{prefix}/group/{name}/say": name for name in config.groups}
        self.pool = f"{prefix}/synth/say" if config.role == "synth" else None
        self.routes: dict[str, Callable[[bytes], None]] = {}

    @property
    def pool_filter(self) -> str | None:
        """The pool's shared subscription, for a synth daemon."""
        return None if self.pool is None else f"$share/{POOL_SHARE}/{self.pool}"

    def subscriptions(self) -> list[list[tuple[str, SubscribeOptions]]]:
        """One SUBSCRIBE per list: requests without retained messages; routes with them
        (Home Assistant's status is retained)."""
        options = SubscribeOptions(qos=1, retainHandling=SubscribeOptions.RETAIN_DO_NOT_SEND)
        requests = [(self.say, options), (self.control, options)]
        requests += [(topic, options) for topic in self.groups]
        if self.pool_filter is not None:
            requests.append((self.pool_filter, options))
        batches = [requests]
        if self.routes:
            batches.append([(topic, SubscribeOptions(qos=1)) for topic in self.routes])
        return batches

    def dispatch(self, handler: LinkHandler, topic: str, payload: bytes, ticket: Ticket,
                 props: Any) -> bool:
        """Hand a message to the daemon; False: not a request (the caller acknowledges it)."""
        if topic == self.control:
            handler.on_control(payload, ticket)
            return True
        if topic == self.say:
            kind: Literal["device", "group", "pool"] = "device"
        elif topic in self.groups:
            kind = "group"
        elif topic == self.pool:
            kind = "pool"
        else:
            return False
        response = getattr(props, "ResponseTopic", None)
        correlation = getattr(props, "CorrelationData", None)
        handler.on_say(payload, ticket, Origin(
            kind, self.groups.get(topic), response if isinstance(response, str) else None,
            bytes(correlation) if isinstance(correlation, bytes | bytearray) else None))
        return True
