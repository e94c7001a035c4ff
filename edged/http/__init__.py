"""The HTTP server: `/api/tts`, OpenAI's `/v1/audio/speech`, `/api/say` and the daemon's events,
health and metrics, and a web page to type and listen (`GET /`)."""

from .server import HttpServer

__all__ = ["HttpServer"]
