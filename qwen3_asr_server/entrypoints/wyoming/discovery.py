"""Zeroconf (mDNS) discovery: the Wyoming port advertised as `_wyoming._tcp` on the local
network (`--wyoming-zeroconf [NAME]`), so that Home Assistant offers to add it by itself.

The advertisement is the `wyoming` library's own (`wyoming.zeroconf`, which Home Assistant's
Wyoming servers use), made by the process that lives as long as the server: the only one, or
the main process of `--workers N` (its workers come and go; two advertisers of one name would
clash). It says one IPv4 address, so the port must listen on one that other machines reach:
`settings.advertised_address` says which, and refuses what no other machine could connect to.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import AsyncIterator

from ...settings.wyoming import WyomingSettings, advertised_address

logger = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
LABEL_BYTES = 63  # a service instance name is one DNS label


def default_name() -> str:
    """The name a bare `--wyoming-zeroconf` advertises: `qwen3-asr-` and this machine's host
    name (a container's or a pod's when it runs in one), cut to one DNS label."""
    name = f"qwen3-asr-{socket.gethostname().split('.')[0]}"
    return name.encode()[:LABEL_BYTES].decode(errors="ignore")


@contextlib.asynccontextmanager
async def advertised(settings: WyomingSettings) -> AsyncIterator[None]:
    """The Wyoming port advertised while inside, withdrawn (mDNS goodbye) on the way out;
    nothing when `--wyoming-zeroconf` is not given. An advertisement that fails (no route for
    mDNS, its name taken by another server) is logged: the port is served all the same, and
    Home Assistant can still be given its host and port."""
    name, port = settings.wyoming_zeroconf, settings.wyoming_port
    if name is None or port is None:
        yield
        return
    # here: servers that advertise nothing never import zeroconf
    from wyoming.zeroconf import HomeAssistantZeroconf

    host = advertised_address(settings.wyoming_host)
    async with contextlib.AsyncExitStack() as stack:
        try:
            advertisement = HomeAssistantZeroconf(port=port, name=name, host=host)
            # The helper has no way to withdraw: closing its AsyncZeroconf unregisters the
            # service, which sends browsers the goodbye that says it is gone.
            stack.push_async_callback(advertisement._aiozc.async_close)
            await advertisement.register_server()
        except Exception as exc:  # zeroconf's errors have no common base but Exception
            logger.error(
                "Cannot advertise the Wyoming port over zeroconf (%s: %s); it is served all "
                "the same: add it in Home Assistant by host and port",
                type(exc).__name__,
                exc,
            )
        else:
            logger.info(
                "Wyoming port advertised over zeroconf as %r (%s) at %s:%d",
                name,
                SERVICE_TYPE,
                advertisement.host,
                port,
            )
        yield
