"""The Wyoming TTS server: a network server on the daemon's asyncio loop (edged/net).

    WyomingServer.start()  listen on wyoming.host:wyoming.port (loopback by default), then
                           advertise over zeroconf in the background when listening beyond it
    a client connects      from an address outside wyoming.allowed_clients: closed at once,
                           unanswered (gate.py: the protocol has no authentication); else at
                           most wyoming.max_connections at once: one more gets an `error`
                           event and is closed; each connection is a `Connection`
    WyomingServer.stop()   stop listening, end every connection (their speech streams close),
                           withdraw the zeroconf record

The speech comes from the same `Speech` as MQTT's (loaded voices, phrase cache, request policy),
through the one synthesis scheduler as the source "wyoming", at `wyoming.priority`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence

from wyoming.error import Error
from wyoming.event import async_write_event

from ..config import Config
from ..daemon.policy import RequestPolicy
from ..net import spawn
from ..synthesis import Speech
from ..synthesis.sources import WYOMING
from ..voice.catalog.listing import VoiceListing
from .advertise import Advertiser, addresses_to_advertise
from .connection import Connection, Context
from .framing import Bounds
from .gate import ClientGate, RefusalLog, peer_text
from .info import build_info

_LOGGER = logging.getLogger(__name__)


class WyomingError(Exception):
    """The server cannot start (the port is taken, ...); one line naming the key."""


class WyomingServer:
    name = WYOMING

    def __init__(self, config: Config, speech: Speech, policy: RequestPolicy,
                 voices: Sequence[VoiceListing]) -> None:
        self._config = config.wyoming
        self._device_id = config.device_id
        max_chars = self._config.max_chars
        self._context = Context(
            speech=speech, policy=policy, info=build_info(voices).event(), voices=tuple(voices),
            max_chars=max_chars, idle_timeout_s=self._config.idle_timeout_s,
            priority=self._config.priority,
            # JSON may spell a character in 12 bytes (a surrogate pair escaped); 4 KiB for the rest.
            bounds=Bounds(data_bytes=12 * max_chars + 4096))
        self._server: asyncio.Server | None = None
        self._advertiser: Advertiser | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._count = threading.Condition()
        self._gate = ClientGate(self._config.allowed_clients)
        self._strangers, self._crowd = RefusalLog(), RefusalLog()
        self._active = 0
        self.port = self._config.port

    @property
    def advertised(self) -> list[str]:
        """The addresses being advertised over zeroconf (or being registered); [] when not."""
        return list(self._advertiser.addresses) if self._advertiser is not None else []

    async def start(self) -> None:
        host, port = self._config.host, self._config.port
        try:
            self._server = await asyncio.start_server(self._accept, host, port,
                                                      limit=self._context.bounds.line_bytes)
        except OSError as err:
            raise WyomingError(f"wyoming.port: cannot listen on {host}:{port}: "
                               f"{err.strerror or err}") from None
        _LOGGER.info("Wyoming server on tcp://%s:%d (%d voice(s), at most %d connections, "
                     "clients from %s)", host, port, len(self._context.voices),
                     self._config.max_connections, ", ".join(self._config.allowed_clients))
        addresses = addresses_to_advertise(host)
        if self._gate.loopback_only and addresses:
            _LOGGER.warning("Wyoming: wyoming.host is %s but wyoming.allowed_clients admits "
                            "loopback only: a Home Assistant on another machine will be refused "
                            "(list its address there)", host)
        if self._config.zeroconf:
            if addresses:
                self._advertiser = Advertiser(self._device_id, port, addresses)
                spawn(self._advertiser.start())  # mDNS probing takes seconds: not before READY
            else:
                _LOGGER.info("Zeroconf: not advertising: the Wyoming server listens on %s only "
                             "(set wyoming.host to reach it from another machine)", host)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._advertiser is not None:
            await self._advertiser.stop()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if self._gate.admits(peer) is None:
            self._strangers.refused("Wyoming: refused a connection from %s: not in "
                                    "wyoming.allowed_clients (%s)", peer_text(peer),
                                    ", ".join(self._config.allowed_clients))
            writer.transport.abort()  # at once: nothing is said to a stranger
            return
        with self._count:
            full = self._active >= self._config.max_connections
            if not full:
                self._active += 1
        if full:
            await self._refuse(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await Connection(reader, writer, self._context).serve()
        finally:
            self._tasks.discard(task)
            with self._count:
                self._active -= 1
                self._count.notify_all()

    async def _refuse(self, writer: asyncio.StreamWriter) -> None:
        limit = self._config.max_connections
        self._crowd.refused("Wyoming: refused a connection: %d clients already connected "
                            "(wyoming.max_connections)", limit)
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            await asyncio.wait_for(async_write_event(Error(
                text=f"busy: {limit} clients are already connected (wyoming.max_connections)",
                code="busy").event(), writer), 1.0)
        writer.close()
