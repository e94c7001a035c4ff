"""Who may connect: the Wyoming protocol has no authentication, so the client's address is the
only gate (wyoming.allowed_clients, loopback by default). A refused connection is closed at once
without a word; what is refused is logged, bounded: the first refusal of a minute gets a line,
the others are counted into the next one, so a flood of connections cannot flood the log.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Iterable
from typing import Final

_LOGGER = logging.getLogger("edged.wyoming.server")
LOG_EVERY_S: Final = 60.0
"""At most one line per this long for each kind of refusal."""

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class ClientGate:
    def __init__(self, allowed: Iterable[str]) -> None:
        self._networks: tuple[Network, ...] = tuple(
            ipaddress.ip_network(n, strict=False) for n in allowed)

    def admits(self, peername: object) -> str | None:
        """The client's address if it may connect, else None (also when it cannot be told)."""
        address = _address(peername)
        if address is None:
            return None
        return str(address) if any(address in n for n in self._networks) else None

    @property
    def loopback_only(self) -> bool:
        return all(n.is_loopback for n in self._networks)


def _address(peername: object) -> Address | None:
    """The peer's address from asyncio's `peername` (an IPv4 client of a dual-stack socket
    shows as ::ffff:a.b.c.d: its IPv4 address is the one to check)."""
    if not isinstance(peername, tuple) or not peername or not isinstance(peername[0], str):
        return None
    try:
        address = ipaddress.ip_address(peername[0].split("%", 1)[0])  # no zone (fe80::1%eth0)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def peer_text(peername: object) -> str:
    address = _address(peername)
    return str(address) if address is not None else "an unknown address"


class RefusalLog:
    """One warning line per LOG_EVERY_S for a kind of refusal; the rest counted into it."""

    def __init__(self) -> None:
        self._next = 0.0
        self._unlogged = 0

    def refused(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now < self._next:
            self._unlogged += 1
            return
        more = (f" ({self._unlogged} more refused in the last minute(s), not logged)"
                if self._unlogged else "")
        _LOGGER.warning(message + "%s", *args, more)
        self._next, self._unlogged = now + LOG_EVERY_S, 0
