"""Stop working for a client that has gone.

Once a request's body is read, nothing in a route listens to the connection until its answer
starts: a client that hangs up while its audio is with vLLM would keep the upstream requests
(and their admission slots) busy until vLLM finished for no one. This middleware listens in
that gap and cancels the route, which cancels its upstream requests; vLLM then stops
generating. Once the answer has started, a streamed one is Starlette's to watch.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import client_closed, response


class CancelOnDisconnect:
    """ASGI middleware: a client gone before its answer started cancels the route (499)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_read = asyncio.Event()
        answered = False

        async def receive_tracking() -> Message:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_read.set()
            return message

        async def send_tracking(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
                listener.cancel()
            await send(message)

        async def client_gone() -> None:
            await body_read.wait()
            while (await receive())["type"] != "http.disconnect":
                pass

        route = asyncio.ensure_future(self.app(scope, receive_tracking, send_tracking))
        listener = asyncio.ensure_future(client_gone())
        try:
            await asyncio.wait({route, listener}, return_when=asyncio.FIRST_COMPLETED)
            listener.cancel()
            if not route.done() and not answered:
                route.cancel()  # the client left before its answer started
            await asyncio.wait({route})
        except asyncio.CancelledError:  # this request itself is cancelled: so is its route
            route.cancel()
            listener.cancel()
            raise
        if route.cancelled():
            await response(client_closed())(scope, receive, send)
            return
        route.result()
