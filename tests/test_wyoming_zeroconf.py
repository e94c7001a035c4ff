"""Zeroconf for the Wyoming server: advertised only beyond loopback, found by a real mDNS browser,
withdrawn at stop; a failure to advertise is one warning.

Multicast works inside this VM (a python-zeroconf browser in the same process sees the record on
eth0), so the browse test is real; the decision which addresses to advertise is tested on its own.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from pathlib import Path

import pytest
from zeroconf import ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncZeroconf

from edged.voice import PiperVoice
from edged.wyoming.advertise import SERVICE_TYPE, Advertiser, addresses_to_advertise
from tests.harness.wyoming_server import serve

_TIMEOUT_S = 15.0


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.1.1"])
def test_a_loopback_listener_is_not_advertised(host: str) -> None:
    """Nothing to tell the network about a server only this host can reach."""
    assert addresses_to_advertise(host) == []


def test_a_wildcard_listener_advertises_this_hosts_other_addresses() -> None:
    """0.0.0.0: every non-loopback address of the host's interfaces, none loopback."""
    found = addresses_to_advertise("0.0.0.0")
    assert found, "this machine has a non-loopback interface"
    assert all(not ipaddress.ip_address(a).is_loopback for a in found)


def test_a_specific_address_is_advertised_as_it_is() -> None:
    """A server bound to one address is advertised at that address only."""
    assert addresses_to_advertise("192.0.2.77") == ["192.0.2.77"]


def test_a_failure_to_advertise_is_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A name zeroconf refuses (longer than a DNS label) makes start() return False after one
    warning; it never raises."""
    caplog.set_level(logging.WARNING, logger="edged.wyoming.advertise")
    advertiser = Advertiser("x" * 80, 10200, ["192.0.2.77"])
    assert asyncio.run(advertiser.start()) is False
    assert len(caplog.records) == 1 and "cannot advertise" in caplog.records[0].getMessage()


def test_zeroconf_off_advertises_nothing(tmp_path: Path, tiny_voice_path: Path) -> None:
    """wyoming.zeroconf: false keeps a wildcard listener quiet."""
    s = serve(tmp_path, PiperVoice.load(tiny_voice_path), host="0.0.0.0", zeroconf=False)
    try:
        assert s.server.advertised == []
    finally:
        s.stop()


def test_a_server_beyond_loopback_is_found_by_a_browser_and_withdrawn(
        tmp_path: Path, tiny_voice_path: Path) -> None:
    """Home Assistant's way in: a `_wyoming._tcp` browser sees `<device_id>._wyoming._tcp` with
    the server's port; at stop the record is withdrawn."""
    s = serve(tmp_path, PiperVoice.load(tiny_voice_path), host="0.0.0.0")
    wanted = f"{s.config.device_id}.{SERVICE_TYPE}"
    stopped = False

    async def browse() -> tuple[int | None, list[str]]:
        zc = AsyncZeroconf()
        added, removed = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()

        def changed(zeroconf: Zeroconf, service_type: str, name: str,
                    state_change: ServiceStateChange) -> None:
            if name == wanted:
                target = added if state_change is ServiceStateChange.Added else removed
                loop.call_soon_threadsafe(target.set)

        browser = AsyncServiceBrowser(zc.zeroconf, [SERVICE_TYPE], handlers=[changed])
        try:
            await asyncio.wait_for(added.wait(), _TIMEOUT_S)
            info = await zc.async_get_service_info(SERVICE_TYPE, wanted, 3000)
            port = info.port if info else None
            addresses = info.parsed_addresses() if info else []
            await asyncio.to_thread(s.stop)
            nonlocal stopped
            stopped = True
            await asyncio.wait_for(removed.wait(), _TIMEOUT_S)
            return port, addresses
        finally:
            await browser.async_cancel()
            await zc.async_close()

    try:
        port, addresses = asyncio.run(browse())
    finally:
        if not stopped:
            s.stop()
    assert port == s.port
    assert set(addresses) == set(addresses_to_advertise("0.0.0.0"))
