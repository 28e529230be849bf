"""GET /v1/realtime?intent=transcription: OpenAI's Realtime API, transcription sessions.

The handshake is checked before the WebSocket is accepted, so a refused client gets an HTTP
answer in OpenAI's error shape (where the server supports that ASGI extension). Once open,
frames are read one at a time: a bad one is answered with an `error` event and the session
goes on; a client that stops reading for SEND_TIMEOUT seconds is disconnected. On SIGTERM a
session lets the utterance being spoken end and be transcribed, then closes with 1012.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import orjson
from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from ..errors import APIError, EventError, send_error
from ..protocol.realtime import handshake
from ..realtime import server_events as events
from ..realtime.client_events import parse_client_event
from ..realtime.server_events import ClientGone
from ..realtime.session import Session
from ..state import AppState, get_state

logger = logging.getLogger(__name__)
router = APIRouter()

BETA_PROTOCOL = "openai-beta.realtime-v1"
MAX_EVENT_BYTES = 4 << 20  # one client event; uvicorn's own frame limit (16 MiB) is above it
SEND_TIMEOUT = 10.0  # seconds a client may leave our events unread before it is dropped
# RFC 6455's registry: "the service is restarted; a client may reconnect" (after a drain)
SERVICE_RESTART = 1012
RESTART_REASON = "The server is restarting: reconnect."


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket) -> None:
    state = get_state(websocket)
    offered: list[str] = websocket.scope.get("subprotocols", [])
    try:
        _admit(state, websocket)
    except APIError as exc:
        await send_error(exc, websocket.scope, websocket.receive, websocket.send)
        return
    await websocket.accept(subprotocol="realtime" if "realtime" in offered else None)
    beta = websocket.headers.get("openai-beta", "").startswith("realtime=v1")
    lock = asyncio.Lock()

    async def send(event: dict[str, Any]) -> None:
        async with lock:  # the session's worker and this loop both send
            try:
                text = orjson.dumps(event).decode()
                await asyncio.wait_for(websocket.send_text(text), SEND_TIMEOUT)
            # RuntimeError: uvicorn closed it meanwhile (a ping unanswered, shutdown)
            except (TimeoutError, asyncio.TimeoutError, RuntimeError, WebSocketDisconnect) as exc:
                raise ClientGone from exc

    async def close_when_drained() -> None:
        """SIGTERM: once the utterance being spoken is transcribed, close with 1012, which
        tells the client to reconnect (to another replica, or to this one restarted)."""
        await state.drain.started.wait()
        await session.settled()
        async with lock:
            await asyncio.wait_for(websocket.close(SERVICE_RESTART, RESTART_REASON), SEND_TIMEOUT)

    request_id: str = websocket.state.request_id  # request_id.RequestIdMiddleware
    await asyncio.to_thread(state.speech_model)  # the first session loads it: not on the loop
    session = Session(state, send, request_id, beta or BETA_PROTOCOL in offered)
    state.metrics.realtime_sessions.inc()
    closing = asyncio.create_task(close_when_drained())
    try:
        await session.start()
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            frame = message["text"] if message.get("text") is not None else message.get("bytes")
            try:
                event = parse_client_event(frame or b"", MAX_EVENT_BYTES)
            except EventError as exc:
                await send(events.error(exc))
                continue
            await session.handle(event)
    except (WebSocketDisconnect, ClientGone):
        pass  # the client left, or stopped reading
    finally:
        closing.cancel()
        await asyncio.wait([closing])
        await session.close()
        state.metrics.realtime_sessions.dec()
        if websocket.client_state == WebSocketState.CONNECTED:
            # a client that does not read would hold the close frame (and us) forever
            with contextlib.suppress(RuntimeError, TimeoutError, asyncio.TimeoutError):
                await asyncio.wait_for(websocket.close(), SEND_TIMEOUT)


def _admit(state: AppState, websocket: WebSocket) -> None:
    """Refuse, as the HTTP routes would, what must not get a session (the key and a draining
    server are refused before this, by the middleware)."""
    handshake(websocket.query_params, state.policy)
    state.upstream.check_ready()
