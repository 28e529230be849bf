"""A batch line's audio named by `file_url` (as vLLM's run-batch names it), downloaded by the
server when the operator allows it (`--batch-file-urls`). Against server-side request forgery
only public addresses are reached: every address a host name resolves to is checked at
connection time (so a name cannot resolve to a public address when checked and a private one
when used), an address written in the URL likewise, and redirects are not followed."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.resolver import DefaultResolver

from ..errors import APIError, invalid

CHUNK = 1 << 16


def public(address: str) -> bool:
    """An address anyone on the internet could reach: not loopback, private, link-local,
    multicast, reserved nor the cloud metadata service's."""
    return ipaddress.ip_address(address.split("%")[0]).is_global


def refused(where: str) -> APIError:
    message = f"file_url points at {where}, which this server does not fetch from."
    return invalid(message, "file_url", code="file_url_not_allowed")


class PublicResolver(AbstractResolver):
    """The system's resolver, refusing a name any of whose addresses is not public."""

    def __init__(self) -> None:
        self._resolver = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[Any]:
        found = await self._resolver.resolve(host, port, family)
        for each in found:
            if not public(each["host"]):
                raise refused(f"a non-public address ({each['host']})")
        return found

    async def close(self) -> None:
        await self._resolver.close()


@dataclass(frozen=True)
class Downloads:
    """Where downloads go (a temporary file each), how large and how long they may be."""

    folder: Path
    limit: int
    timeout: float


async def download(url: str, downloads: Downloads) -> BinaryIO:
    """The file at `url`, at most `downloads.limit` bytes, in a temporary file (gone when
    closed); a 400 naming `file_url` for anything that is not a public http(s) file."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid("file_url must be an http:// or https:// URL.", "file_url")
    try:
        if not public(parts.hostname):
            raise refused(f"a non-public address ({parts.hostname})")
    except ValueError:
        pass  # a name, not an address: the resolver checks what it resolves to
    connector = aiohttp.TCPConnector(resolver=PublicResolver(), use_dns_cache=False)
    await asyncio.to_thread(downloads.folder.mkdir, parents=True, exist_ok=True)
    target = tempfile.TemporaryFile(dir=downloads.folder)  # noqa: SIM115 (the caller's to close)
    try:
        async with (
            aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=downloads.timeout)
            ) as session,
            session.get(url, allow_redirects=False) as response,
        ):
            if response.status != 200:
                raise invalid(f"file_url answered HTTP {response.status}.", "file_url")
            size = 0
            async for chunk in response.content.iter_chunked(CHUNK):
                size += len(chunk)
                if size > downloads.limit:
                    message = f"file_url's file is over {downloads.limit} bytes."
                    raise invalid(message, "file_url")
                target.write(chunk)
    except (aiohttp.ClientError, TimeoutError) as exc:
        target.close()
        reason = str(exc) or type(exc).__name__
        raise invalid(f"file_url could not be fetched: {reason}", "file_url") from None
    except BaseException:
        target.close()
        raise
    target.seek(0)
    return cast(BinaryIO, target)
