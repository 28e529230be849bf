"""An answer given before the request's body is in closes the connection.

A refusal that needs no body (a 401 without the key, a 404, a 405, a 413 at its declared
length, a 503 while draining) is sent at once, but the rest of the body is still on its way:
kept alive, the connection would have to read it all before the next request, and a client
declaring 2 GB could hold it open by trickling a byte within each `--read-timeout`. Such an
answer says `Connection: close`, which makes uvicorn close the connection once it is sent.
A request without a body, or whose body the route read to its end, keeps its connection.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .body_limits import content_length

CLOSE = (b"connection", b"close")


class CloseEarlyAnswers:
    """ASGI middleware: `Connection: close` on an answer that starts before the body is read.

    It must be outside every middleware that may answer early (the drain, the key, the body
    limits) and sees the body as the route reads it.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not has_body(scope):
            await self.app(scope, receive, send)
            return
        body_read = False

        async def receive_tracking() -> Message:
            nonlocal body_read
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_read = True  # the whole body, or the client gone
            return message

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and not body_read:
                headers = list(message.get("headers", []))
                if not any(name.lower() == b"connection" for name, _ in headers):
                    message = {**message, "headers": [*headers, CLOSE]}
            await send(message)

        await self.app(scope, receive_tracking, send_closing)


def has_body(scope: Scope) -> bool:
    """Whether the request declares a body: a Content-Length above 0, or a Transfer-Encoding."""
    chunked = any(name == b"transfer-encoding" for name, _ in scope["headers"])
    return chunked or (content_length(scope["headers"]) or 0) > 0
