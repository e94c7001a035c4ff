"""The HTTP server: `/api/tts`, OpenAI's `/v1/audio/speech`, `/api/say` and the daemon's events,
health and metrics, and a web page to type and listen (`GET /`)."""

from ..net.listen import url_of
from .server import HttpServer, bind
from .speak import SOURCE

__all__ = ["SOURCE", "HttpServer", "bind", "url_of"]
