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

from ...errors import client_closed
from .errors import response


class CancelOnDisconnect:
    """ASGI middleware: a client gone before its answer started cancels the route (499).

    The route runs in the request's own task, which the listener cancels: one task more per
    request, started once the body is in, rather than a second one for the route.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = asyncio.current_task()
        assert request is not None  # an ASGI app runs in a task
        listener: asyncio.Task[None] | None = None
        answered = gone = False

        async def client_gone() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            if not answered:
                gone = True
                request.cancel()

        async def receive_tracking() -> Message:
            nonlocal listener
            message = await receive()
            body_read = message["type"] != "http.request" or not message.get("more_body", False)
            if body_read and listener is None:
                listener = asyncio.ensure_future(client_gone())
            return message

        async def send_tracking(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
                if listener is not None:
                    listener.cancel()
            await send(message)

        try:
            await self.app(scope, receive_tracking, send_tracking)
        except asyncio.CancelledError:
            if not gone:
                raise  # this request itself is cancelled, not by the client leaving
            request.uncancel()
        finally:
            if listener is not None:
                listener.cancel()
        if gone and not answered:
            await response(client_closed())(scope, receive, send)
