"""Zeroconf (mDNS): `_wyoming._tcp` advertised so Home Assistant's Wyoming integration finds the
server by itself, as it finds wyoming-piper.

Only when the server listens beyond loopback: a server on 127.0.0.1 is reachable from this host
only, and telling the network about it would be a lie. Advertising is a convenience: any failure
(no multicast, no interface, a name clash) is one warning, and the server runs on; Home Assistant
can still be given the host and port by hand. python-zeroconf is imported only when advertising.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any, Final

_LOGGER = logging.getLogger(__name__)
SERVICE_TYPE: Final = "_wyoming._tcp.local."
_WILDCARDS: Final = ("", "0.0.0.0", "::")


def addresses_to_advertise(host: str) -> list[str]:
    """The addresses a server listening on `host` is reachable at from other machines; [] when
    it listens on loopback only (nothing to advertise)."""
    if host in _WILDCARDS:
        candidates = _interface_addresses(ipv6=host == "::")
    else:
        try:
            candidates = [str(ipaddress.ip_address(host))]
        except ValueError:  # a host name: what it resolves to
            candidates = _resolve(host)
    return [a for a in dict.fromkeys(candidates) if not _local_only(a)]


def _local_only(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_loopback or ip.is_unspecified or ip.is_link_local


def _interface_addresses(*, ipv6: bool) -> list[str]:
    import ifaddr  # a dependency of zeroconf

    found = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if isinstance(ip.ip, str):
                found.append(ip.ip)
            elif ipv6:
                found.append(ip.ip[0])
    return found


def _resolve(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as err:
        _LOGGER.warning("Zeroconf: cannot resolve wyoming.host %r (%s); not advertising", host, err)
        return []
    return [str(info[4][0]) for info in infos]


class Advertiser:
    """Registers one `_wyoming._tcp` service; `start`/`stop` on the server's loop."""

    def __init__(self, name: str, port: int, addresses: list[str]) -> None:
        self.name = name
        self.port = port
        self.addresses = addresses
        self._zeroconf: Any = None
        self._info: Any = None

    async def start(self) -> bool:
        """Advertise; False (after one warning) when it cannot."""
        try:
            from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

            self._info = AsyncServiceInfo(
                SERVICE_TYPE, f"{self.name}.{SERVICE_TYPE}", port=self.port,
                addresses=[ipaddress.ip_address(a).packed for a in self.addresses],
                properties={"program": "edged"})
            self._zeroconf = AsyncZeroconf()
            announced = await self._zeroconf.async_register_service(self._info)
            await announced  # the announcements are sent
        except Exception as err:  # advertising is a convenience, never a reason to stop
            _LOGGER.warning("Zeroconf: cannot advertise the Wyoming server (%s: %s); add it to "
                            "Home Assistant by host and port", type(err).__name__, err)
            await self.stop()
            return False
        _LOGGER.info("Zeroconf: advertising %s on %s port %d", self._info.name,
                     ", ".join(self.addresses), self.port)
        return True

    async def stop(self) -> None:
        zeroconf, self._zeroconf = self._zeroconf, None
        if zeroconf is None:
            return
        try:
            if self._info is not None:
                goodbyes = await zeroconf.async_unregister_service(self._info)
                await goodbyes  # sent before the sockets close, or browsers keep the record
            await zeroconf.async_close()
        except Exception as err:
            _LOGGER.debug("Zeroconf: stopping failed: %s", err)
