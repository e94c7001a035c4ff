"""The one policy every speech request obeys, whichever door it came in by: MQTT `say` (and the
group and pool topics), HTTP `/api/say`, `/api/tts`, `/v1/audio/speech`, Wyoming `synthesize`
and `edged say`.

    fields (requests.py, fields.py: each field's rule)  ──►  a SpeechRequest or a Request
    policy.admit(request)  ──►  the request as this device will speak it, or `Refused`:
      - no voice named: the device's selected voice (Home Assistant's select), else the
        configured one
      - the memory guard: while the process stays above limits.memory_mb and synthesis runs,
        nothing new is taken but a critical announcement: it is the last thing ever refused
        (its memory is one stream's windows; what others took is given back when synthesis
        goes idle, and an idle daemon still over takes the next request: memory.py)
      - a named voice must fit limits.memory_mb next to what cannot be unloaded
      - its language tags, and the speaker and speed of the configured voice

Each intake answers a refusal its own way, from `Refused.problem`: a `rejected` event (MQTT, and
HTTP /api/say's events), an HTTP status with the JSON reason (`HTTP_STATUS`), a Wyoming `error`
event (`WYOMING_CODE`), one stderr line and exit 2 (`edged say`).

Where an intake differs, it is one line:
- Wyoming has no priority field: its requests are `wyoming.priority`; /api/tts and OpenAI's
  speech are `normal`; announcements say their own.
- Wyoming has no `finished`: its requests end with audio-stop (and synthesize-stopped).
- `edged say` is not the daemon: it has no device settings (the configured voice speaks) and no
  memory guard (it is the whole process), and it may name any installed voice or file.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Final, Literal, TypeVar

from .priorities import CRITICAL
from .requests import SpeechRequest

if TYPE_CHECKING:
    from ..memory import MemoryGuard
    from ..synthesis import Planner
    from .device_state import DeviceSettings

Problem = Literal["invalid", "too_large", "busy", "unavailable", "over_budget"]
"""Why a request was refused: what the refusal counts, HTTP statuses and Wyoming codes key on.
busy: a bound of the queue or the scheduler (try again soon); unavailable: the daemon is stopping
or over its memory budget; over_budget: the voice asked for cannot fit the budget at all."""
HTTP_STATUS: Final[dict[str, int]] = {"invalid": 400, "too_large": 413, "busy": 429,
                                      "unavailable": 503, "over_budget": 422}
WYOMING_CODE: Final[dict[str, str]] = {"invalid": "bad-request", "too_large": "too-long",
                                       "busy": "busy", "unavailable": "busy",
                                       "over_budget": "over-budget"}
R = TypeVar("R", bound=SpeechRequest)


class Refused(Exception):
    """A request this device will not speak; the message is safe to send back."""

    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem: Problem = problem


class RequestPolicy:
    """Thread-safe (the device settings, the memory guard and the voices are)."""

    def __init__(self, planner: Planner, *, settings: DeviceSettings | None = None,
                 memory: MemoryGuard | None = None) -> None:
        self._planner = planner
        self._voices = planner.voices
        self._settings = settings
        self._memory = memory

    def admit(self, request: R) -> R:
        """`request` with the voice it will be spoken with; Refused."""
        voice = request.voice
        if voice is None and self._settings is not None:
            voice = self._settings.voice
        if self._memory is not None and request.priority != CRITICAL and (
                over := self._memory.over_budget()):
            raise Refused("unavailable", over)
        if voice is not None and (why := self._voices.fits(voice)):
            raise Refused("over_budget", why)
        if problem := self._planner.problem(request.text, voice, speaker=request.speaker,
                                           speed=request.speed):
            raise Refused("invalid", problem)
        return request if voice == request.voice else dataclasses.replace(request, voice=voice)

    def settable(self, voice: str) -> str | None:
        """Why `voice` cannot be the device's selected voice (None: it can): one that can never
        fit the memory budget would refuse every announcement."""
        return self._voices.fits(voice)
