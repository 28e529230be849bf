"""The last resort: an unexpected exception becomes a logged 500 in OpenAI's shape."""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import APIError, client_closed
from .errors import response

logger = logging.getLogger(__name__)


class ErrorGuard:
    """ASGI middleware: an unexpected exception becomes a logged 500 in OpenAI's shape.

    It sits inside the request-id and metrics middleware (Starlette's own last-resort handler
    sits outside them), so that even this answer is counted and carries its request id.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracking)
        except ClientDisconnect:
            # Gone while sending its request (or cut off by the read timeout): nobody is left
            # to answer. Nginx's 499 says so in the access log and the metrics.
            logger.info("Client left during its request to %s", scope["path"])
            if not started:
                await response(client_closed())(scope, receive, send)
        except Exception:
            logger.exception("Unhandled error on %s %s", scope["method"], scope["path"])
            if started:
                raise
            error = APIError(500, "The server had an error while processing your request.")
            await response(error)(scope, receive, send)
