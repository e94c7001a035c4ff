"""The network servers' shared ground: one asyncio loop in its own thread, and speech from it."""

from .loop import NetLoop, Server, run_blocking, spawn
from .speech import chunks, open_speech

__all__ = ["NetLoop", "Server", "chunks", "open_speech", "run_blocking", "spawn"]
