"""`--wyoming-zeroconf`: `server.py`'s Wyoming port found on the network as Home Assistant finds
it (python-zeroconf's browser of `_wyoming._tcp`), connected to at the address and port found,
and gone from the network when the server stops.

mDNS here goes out on the machine's LAN interface and comes back to it (multicast loopback),
so the browser in this process sees what the server advertises.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from zeroconf import ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from qwen3_asr_server.entrypoints.wyoming.discovery import SERVICE_TYPE
from tests.fixtures.process import bound_udp, descendants, workers
from tests.fixtures.wyoming import start_wyoming

MDNS = ("224.0.0.251", 5353)
WAIT = 20  # seconds for an advertisement to be seen, or its withdrawal


def _mdns_routed() -> bool:
    """Whether this machine has a route for mDNS's multicast group (none: nothing to find)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(MDNS)
        except OSError:
            return False
    return True


pytestmark = pytest.mark.skipif(not _mdns_routed(), reason="no route for mDNS on this machine")


class Browser:
    """The names a `_wyoming._tcp` browser has seen come and go, in order."""

    def __init__(self, zeroconf: AsyncZeroconf) -> None:
        self.zeroconf = zeroconf
        self.changes: asyncio.Queue[tuple[ServiceStateChange, str]] = asyncio.Queue()

    def seen(
        self,
        zeroconf: Zeroconf,
        service_type: str,
        name: str,
        state_change: ServiceStateChange,
    ) -> None:
        self.changes.put_nowait((state_change, name))

    async def until(self, change: ServiceStateChange, name: str) -> None:
        async with asyncio.timeout(WAIT):
            while await self.changes.get() != (change, name):
                pass

    async def found(self, name: str) -> AsyncServiceInfo:
        """The service `name`, once it is seen, resolved to its address and port."""
        await self.until(ServiceStateChange.Added, name)
        info = AsyncServiceInfo(SERVICE_TYPE, name)
        assert await info.async_request(self.zeroconf.zeroconf, WAIT * 1000)
        return info


@asynccontextmanager
async def browsing() -> AsyncIterator[Browser]:
    zeroconf = AsyncZeroconf()
    browser = Browser(zeroconf)
    watch = AsyncServiceBrowser(zeroconf.zeroconf, SERVICE_TYPE, handlers=[browser.seen])
    try:
        yield browser
    finally:
        await watch.async_cancel()
        await zeroconf.async_close()


def unique(label: str) -> str:
    """A service name no other test run on this network advertises."""
    return f"qwen3-asr-{label}-{os.getpid()}"


async def test_the_port_is_advertised_while_the_server_runs_then_withdrawn(
    tmp_path: Path,
) -> None:
    name = unique("test")
    async with browsing() as browser:
        wyoming = start_wyoming(
            tmp_path, {}, "--wyoming-host", "0.0.0.0", "--wyoming-zeroconf", name
        )
        try:
            info = await browser.found(f"{name}.{SERVICE_TYPE}")
            assert info.port == wyoming.port
            [address] = info.parsed_addresses()
            assert address != "127.0.0.1"  # a LAN address: what Home Assistant can reach
            async with AsyncTcpClient(address, info.port) as client:  # as Home Assistant does
                await client.write_event(Describe().event())
                event = await asyncio.wait_for(client.read_event(), WAIT)
            assert event is not None
            [program] = Info.from_event(event).asr
            assert program.models[0].name == "tiny"
            assert f"advertised over zeroconf as {name!r}" in wyoming.server.output()
        finally:
            await asyncio.to_thread(wyoming.server.stop)
        await browser.until(ServiceStateChange.Removed, f"{name}.{SERVICE_TYPE}")


async def test_with_workers_the_main_process_alone_advertises(tmp_path: Path) -> None:
    name = unique("workers")
    async with browsing() as browser:
        wyoming = start_wyoming(
            tmp_path,
            {},
            "--workers",
            "2",
            "--wyoming-host",
            "0.0.0.0",
            "--wyoming-zeroconf",
            name,
        )
        try:
            info = await browser.found(f"{name}.{SERVICE_TYPE}")
            assert info.port == wyoming.port
            pid = wyoming.server.proc.pid
            deadline = time.monotonic() + WAIT
            while len(workers(pid)) < 2:
                assert time.monotonic() < deadline, "the workers never started"
                await asyncio.sleep(0.1)
            server = {pid} | descendants(pid)
            assert bound_udp(MDNS[1]) & server == {pid}  # mDNS's socket: the main process's
        finally:
            await asyncio.to_thread(wyoming.server.stop)
        await browser.until(ServiceStateChange.Removed, f"{name}.{SERVICE_TYPE}")
