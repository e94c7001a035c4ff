"""Who asks the scheduler for synthesis, and how many streams each may have open at once: the one
table of sources, built from the config by the composition root.

| source     | who                                        | streams at once                |
|------------|--------------------------------------------|--------------------------------|
| announcer  | announcements (MQTT say, groups, the       | 1: one loudspeaker; the queue  |
|            | synthesis pool, HTTP /api/say), one at a   | waits in front                 |
|            | time from the queue                        |                                |
| http       | /api/tts, /api/tts-batch, /v1/audio/speech | http.max_streams (429 beyond)  |
| wyoming    | Wyoming synthesize, a stream a connection  | wyoming.max_connections        |
| warm       | pinned phrases made in the background      | 1                              |
| voice-load | a voice's first inference when it loads,   | 1: voices load one at a time   |
|            | which measures what it costs               |                                |

Ranks are not the table's: each request's priority says it (policy.py), the warm phrases are
`BACKGROUND`, and a voice's first inference goes ahead of other work (a request waits for
the voice), cutting in only when a critical request loads it (speech.load_rank).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..config import Config

ANNOUNCER: Final = "announcer"
HTTP: Final = "http"
WYOMING: Final = "wyoming"
WARM: Final = "warm"
VOICE_LOAD: Final = "voice-load"


def sources(config: Config) -> dict[str, int]:
    """Each source's bound on open streams (Wyoming's only when its server is on)."""
    table = {ANNOUNCER: 1, HTTP: config.http.max_streams, WARM: 1, VOICE_LOAD: 1}
    if config.wyoming.enabled:
        table[WYOMING] = config.wyoming.max_connections
    return table
