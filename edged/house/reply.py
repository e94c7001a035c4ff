"""Where a request's answers go when it names a reply topic (the synthesis pool, `reply_to`).

    events      -> <reply_to>                 (the request's queued, started, final event)
    audio       -> <reply_to>/audio/<id>      (one WAV, or parts /0, /1, ... and /end)

`reply_to` comes from the request's JSON or from the MQTT 5 Response Topic property, and must
lie under `mqtt.reply_prefix` (default `<group_prefix>/reply`); the
MQTT 5 Correlation Data, when given, goes back as a property on every answer. The events also
go to the daemon's own `<prefix>/event`, as every event does.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Final

MAX_TOPIC_BYTES: Final = 256
MAX_CORRELATION_BYTES: Final = 256
_REQUEST_LEVELS: Final = ("say", "control")


@dataclass(frozen=True)
class Reply:
    topic: str
    correlation: bytes | None = None

    @property
    def events(self) -> str:
        return self.topic

    def audio(self, request_id: str) -> str:
        return f"{self.topic}/audio/{request_id}"


def check_reply_topic(topic: str, prefix: str) -> str | None:
    """Why `topic` cannot be a reply topic (None: it can). It must lie under `prefix`
    (mqtt.reply_prefix: no topic of edged's or Home Assistant's is there: a request must never
    make a member publish to another device's events, state, settings or requests, nor to
    Home Assistant's). Refused besides: wildcards, `$` topics (the broker's), control
    characters, empty levels, and request-like levels (`.../say`, `.../control`)."""
    if not topic:
        return "reply_to is empty"
    if not topic.startswith(prefix + "/"):
        return (f"reply_to must be a topic under {prefix}/ (mqtt.reply_prefix): answers go "
                "nowhere else")
    if len(topic.encode("utf-8", "surrogatepass")) > MAX_TOPIC_BYTES:
        return f"reply_to is longer than {MAX_TOPIC_BYTES} bytes"
    if "+" in topic or "#" in topic:
        return "reply_to must be a topic, not a filter ('+' and '#' are not allowed)"
    if topic.startswith("$"):
        return "reply_to must not start with '$' (the broker's own topics)"
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in topic):
        return "reply_to contains a control character"
    if "" in topic.split("/"):
        return "reply_to has an empty topic level"
    if topic.rsplit("/", 1)[-1] in _REQUEST_LEVELS:
        return "reply_to must not be a request topic (…/say, …/control)"
    return None
