"""A Realtime session's WebSocket, once accepted: frames in, one at a time, events out.

A bad frame is answered with an `error` event and the session goes on; a client that stops
reading for SEND_TIMEOUT seconds is disconnected. On SIGTERM the session lets the utterance
being spoken end and be transcribed, then closes with 1012, which tells the client to
reconnect (to another replica, or to this one restarted).
"""

from __future__ import annotations

import asyncio
import contextlib

import orjson
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from .protocol import SessionConfig
from .server_events import ClientGone, Event
from .services import RealtimeServices
from .session import Session

MAX_EVENT_BYTES = 4 << 20  # one client event; uvicorn's own frame limit (16 MiB) is above it
SEND_TIMEOUT = 10.0  # seconds a client may leave our events unread before it is dropped
# RFC 6455's registry: "the service is restarted; a client may reconnect" (after a drain)
SERVICE_RESTART = 1012
RESTART_REASON = "The server is restarting: reconnect."


class Connection:
    def __init__(
        self,
        services: RealtimeServices,
        websocket: WebSocket,
        beta: bool,
        config: SessionConfig | None = None,
    ) -> None:
        self.services = services
        self.websocket = websocket
        self._lock = asyncio.Lock()  # the session's parts and the frame loop both send
        request_id: str = websocket.state.request_id  # request_id.RequestIdMiddleware
        self.session = Session(services, self.send, request_id, beta, config)

    async def send(self, event: Event) -> None:
        async with self._lock:
            try:
                text = orjson.dumps(event).decode()
                # not wait_for: on 3.11 it loses a cancel that comes as a send ends (bpo-42130)
                async with asyncio.timeout(SEND_TIMEOUT):
                    await self.websocket.send_text(text)
            # RuntimeError: uvicorn closed it meanwhile (a ping unanswered, shutdown)
            except (TimeoutError, RuntimeError, WebSocketDisconnect) as exc:
                raise ClientGone from exc

    async def serve(self) -> None:
        """The session, for as long as the client stays (or the server drains)."""
        closing = asyncio.create_task(self._close_when_drained())
        try:
            await self.session.start()
            await self._frames()
        except (WebSocketDisconnect, ClientGone):
            pass  # the client left, or stopped reading
        finally:
            closing.cancel()
            await asyncio.wait([closing])
            await self.session.close()
            if self.websocket.client_state == WebSocketState.CONNECTED:
                # a client that does not read would hold the close frame (and us) forever
                with contextlib.suppress(RuntimeError, TimeoutError, asyncio.TimeoutError):
                    await asyncio.wait_for(self.websocket.close(), SEND_TIMEOUT)

    async def _frames(self) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            frame = message["text"] if message.get("text") is not None else message.get("bytes")
            await self.session.receive(frame or b"", MAX_EVENT_BYTES)

    async def _close_when_drained(self) -> None:
        await self.session.drained()
        async with self._lock:
            close = self.websocket.close(SERVICE_RESTART, RESTART_REASON)
            await asyncio.wait_for(close, SEND_TIMEOUT)
