"""WebSocket handshakes from web pages of other sites are refused (cross-site WebSocket
hijacking).

A browser lets any page open a WebSocket to any host, sends the page's `Origin` with it, and
applies no CORS check: without this, a page on any site could drive `/v1/realtime` of a
server that has no key (on localhost, on an intranet). A handshake with an `Origin` is
admitted when that origin is the server's own (its host and port are the `Host` the browser
asked) or one `--allowed-origins` names; clients that send no `Origin` (SDKs, other servers)
are not browsers and are let through, to the key check. A WebRTC call's offer
(`POST /v1/realtime/calls`) is checked alike: a page may send it as a form, which needs no
CORS preflight, and each offer would hold a seat until its call timed out.

On a server without `--api-key` every request that changes something (any method but GET,
HEAD and OPTIONS: an upload, a batch, a cancel, a client secret, a transcription) is checked
alike: a multipart or `text/plain` body is a "simple" request a page of any site may send
without a preflight, and it would spend the GPU, fill the disk or mint keys. With a key such
a page cannot send the key (an `Authorization` header needs a preflight, which only the
Realtime routes answer, for `--allowed-origins`), so the key is the check, and clients that
send an `Origin` of their own with it (a browser extension, a desktop app) are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from .errors import send_error

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})  # they change nothing, and a page reads no answer


def normal(origin: str) -> str:
    """`scheme://host[:port]`, lowercased, the default port left out, no trailing slash."""
    parts = urlsplit(origin.strip().lower())
    try:
        port = parts.port
    except ValueError:
        return origin.strip().lower()
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}" if parts.scheme and host else origin.strip().lower()


def admitted(origin: str, host: str | None, allowed: frozenset[str]) -> bool:
    """Whether a page at `origin` may open a WebSocket to the server it reached as `host`."""
    if "*" in allowed or normal(origin) in allowed:
        return True
    if not host:
        return False
    scheme = urlsplit(origin.lower()).scheme
    return scheme in _DEFAULT_PORTS and normal(origin) == normal(f"{scheme}://{host}")


def refused(origin: str) -> APIError:
    return APIError(
        403,
        f"Pages at {origin} may not call this server (see --allowed-origins).",
        code="origin_not_allowed",
    )


class OriginCheck:
    def __init__(
        self, app: ASGIApp, allowed: Iterable[str], keyless: bool, always: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.always = frozenset(always)  # paths checked with a key too (a WebRTC call's)
        self.allowed = frozenset(each if each == "*" else normal(each) for each in allowed)
        self.keyless = keyless  # no --api-key: every request that changes something is checked

    def checks(self, scope: Scope) -> bool:
        """Whether this request's `Origin` is checked (see the module)."""
        if scope["type"] == "websocket":
            return True
        if scope["type"] != "http":
            return False
        return scope["path"] in self.always or (self.keyless and scope["method"] not in _SAFE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.checks(scope):
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            if origin is not None and not admitted(origin, headers.get("host"), self.allowed):
                await send_error(refused(origin), scope, receive, send)
                return
        await self.app(scope, receive, send)
