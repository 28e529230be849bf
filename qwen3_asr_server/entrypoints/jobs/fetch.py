"""A batch line's audio named by `file_url` (as vLLM's run-batch names it), downloaded by the
server when the operator allows it (`--batch-file-urls`). Against server-side request forgery
only public addresses are reached: every address a host name resolves to is checked at
connection time (so a name cannot resolve to a public address when checked and a private one
when used), an address written in the URL likewise (`addresses.public`), and redirects are not
followed. Whatever stops a download (a refusal, a name that does not resolve,
a refused connection, a timeout, an answer other than 200) is one and the same answer to the
client, so that it cannot map the server's network (which names resolve, which ports are
open) by the difference; the log has the detail."""

from __future__ import annotations

import asyncio
import logging
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.resolver import DefaultResolver

from ...errors import APIError, invalid
from ..protocol.addresses import public

logger = logging.getLogger(__name__)

CHUNK = 1 << 16
NOT_FETCHED = (
    "file_url could not be fetched: this server downloads only from a public address that "
    "answers 200 in time, and follows no redirect."
)


class Refused(aiohttp.ClientError):
    """A name that resolves to an address that is not public."""


def not_fetched(host: str, detail: str) -> APIError:
    """The one answer for a download that did not start; `detail` goes to the log only (with
    the host, not the URL, whose query may hold a signature)."""
    logger.info("file_url on %s not fetched: %s", host, detail)
    return invalid(NOT_FETCHED, "file_url", code="file_url_not_allowed")


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
                raise Refused(f"resolves to {each['host']}, which is not public")
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
        allowed = public(parts.hostname)
    except ValueError:
        allowed = True  # a name, not an address: the resolver checks what it resolves to
    if not allowed:
        raise not_fetched(parts.hostname, "not a public address")
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
                raise not_fetched(parts.hostname, f"answered HTTP {response.status}")
            size = 0
            async for chunk in response.content.iter_chunked(CHUNK):
                size += len(chunk)
                if size > downloads.limit:
                    message = f"file_url's file is over {downloads.limit} bytes."
                    raise invalid(message, "file_url")
                target.write(chunk)
    except (aiohttp.ClientError, TimeoutError) as exc:
        target.close()
        raise not_fetched(parts.hostname, str(exc) or type(exc).__name__) from None
    except BaseException:
        target.close()
        raise
    target.seek(0)
    return cast(BinaryIO, target)
