"""Requests and Realtime sessions counted for the drain (`capacity.drain`), refused once it began.

A refused HTTP request gets 503 with `Retry-After`; a refused WebSocket handshake gets the
same answer where the server can send one (see `errors.send_error`, beside this module). A
Realtime session counts for as long as it is open: the drain waits for it to close itself.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ...capacity.drain import Drain, shutting_down
from .errors import send_error

# Paths that answer during a drain: /health says so itself, /livez that the process is still
# well (it is stopping on purpose), /metrics keeps being scraped.
OPEN_PATHS = ("/health", "/livez", "/metrics")


class DrainMiddleware:
    """ASGI middleware: keeps `Drain.active`, and answers 503 once the drain has begun."""

    def __init__(self, app: ASGIApp, drain: Drain) -> None:
        self.app = app
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.drain.draining:
            await send_error(shutting_down(), scope, receive, send)
            return
        self.drain.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.drain.leave()
