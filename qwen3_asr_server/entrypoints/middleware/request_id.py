"""Give every exchange an `x-request-id`: the client's own if it sent a sane one."""

from __future__ import annotations

import re
import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...observability.log_format import REQUEST_ID

HEADER = "x-request-id"
_HEADER = HEADER.encode()
_SANE = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")
_STARTS = frozenset({"http.response.start", "websocket.http.response.start", "websocket.accept"})


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        sent = dict(scope["headers"]).get(_HEADER, b"").decode("latin-1")
        request_id = sent if _SANE.fullmatch(sent) else secrets.token_hex(16)
        scope.setdefault("state", {})["request_id"] = request_id
        pair = (_HEADER, request_id.encode())

        async def send_with_id(message: Message) -> None:
            if message["type"] in _STARTS:  # nothing inside sets the header: it is added
                message = {**message, "headers": [*message.get("headers", ()), pair]}
            await send(message)

        token = REQUEST_ID.set(request_id)  # the log's JSON lines name it
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            REQUEST_ID.reset(token)
