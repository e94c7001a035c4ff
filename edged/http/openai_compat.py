"""OpenAI's speech API, so the tools that speak it (the `openai` SDK, Open WebUI, LibreChat,
Node-RED flows) can use edged by pointing their base URL at it:

    POST /v1/audio/speech {"model": "tts-1", "input": "...", "voice": "alloy",
                           "response_format": "mp3", "speed": 1.0}
    GET  /v1/models

- model: tts-1, tts-1-hd or edged (all the same voice here); anything else is 400.
- voice: OpenAI's names speak with the device's voice (the one selected in Home Assistant, else
  the configured one); an edged voice name picks that voice.
- response_format: mp3 (OpenAI's default), opus, flac, wav, pcm (24 kHz, as OpenAI's); aac has
  no encoder here (415). wav and pcm stream; the others come whole (formats.py).
- speed: edged's range, 0.5-2 (OpenAI's is 0.25-4): outside it is 400, never clamped silently.
- instructions (for OpenAI's newer models) are accepted and ignored: a Piper voice has no
  style prompt.
"""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web

from .errors import HttpError
from .params import TtsParams, checked, json_object, pick_format
from .speak import Speaker

MODELS: Final = ("tts-1", "tts-1-hd", "edged")
OPENAI_VOICES: Final = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx",
                        "sage", "shimmer", "verse")
_FIELDS: Final = ("model", "input", "voice", "response_format", "speed", "instructions",
                  "stream_format")
_PCM_RATE_HZ: Final = 24000


class OpenAiSpeech:
    def __init__(self, speaker: Speaker) -> None:
        self._speaker = speaker

    async def speech(self, request: web.Request) -> web.StreamResponse:
        params = self.params(await json_object(request))
        return await self._speaker.answer(request, params)

    async def models(self, _request: web.Request) -> web.Response:
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "edged"}
                for name in MODELS]
        return web.json_response({"object": "list", "data": data})

    def params(self, data: dict[str, Any]) -> TtsParams:
        unknown = [k for k in data if k not in _FIELDS]
        if unknown:
            raise HttpError(400, f"unknown field {unknown[0][:40]!r}; allowed fields: "
                            f"{', '.join(_FIELDS)}")
        for name in ("model", "input", "voice"):
            if name not in data:
                raise HttpError(400, f"{name} is missing")
        if data["model"] not in MODELS:
            raise HttpError(400, f"model {str(data['model'])[:40]!r} is not available; "
                            f"models: {', '.join(MODELS)}")
        if data.get("stream_format", "audio") != "audio":
            raise HttpError(400, "stream_format: only 'audio' is supported")
        if not isinstance(data.get("instructions", ""), str):
            raise HttpError(400, "instructions must be a string")
        fmt = pick_format(data.get("response_format", "mp3"), "response_format")
        fields: dict[str, Any] = {"text": data["input"], "voice": self._voice(data["voice"])}
        if data.get("speed") is not None:
            fields["speed"] = data["speed"]
        try:
            request = checked(fields, self._speaker.rules)
        except HttpError as err:  # our field names, OpenAI's words
            raise HttpError(err.status, str(err).replace("text", "input", 1)) from None
        return TtsParams(request, fmt, _PCM_RATE_HZ if fmt.name == "pcm" else None)

    def _voice(self, voice: object) -> str | None:
        if not isinstance(voice, str):
            raise HttpError(400, "voice must be a string")
        if voice in OPENAI_VOICES:
            return None  # the device's voice (its selected one, else the configured one)
        known = self._speaker.rules.voices or ()
        if voice not in known:
            raise HttpError(400, f"voice {voice[:40]!r} is unknown; OpenAI's names "
                            f"({', '.join(OPENAI_VOICES)}) speak with the device's voice, "
                            f"or name an edged voice: {', '.join(sorted(known))}")
        return voice
