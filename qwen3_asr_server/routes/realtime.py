"""GET /v1/realtime?intent=transcription: OpenAI's Realtime API, transcription sessions.

The handshake is checked before the WebSocket is accepted, so a refused client gets an HTTP
answer in OpenAI's error shape (where the server supports that ASGI extension), and so is the
session's lease (`capacity.lease`): a 503 while the model loads, then a 429 over
`--max-sessions` (`capacity.seats`). The session holds its lease, its seat and the engine
awake, until it ends; its place in the drain is the middleware's, held for the request's
life. The key, another site's page and a draining server are refused before this, by the
middleware. A client that came with an ephemeral key gets the session it was minted for
(`routes.client_secrets.granted`). Once open, the connection serves its session
(`realtime.connection`).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, WebSocket

from ..capacity.lease import Lease
from ..errors import APIError
from ..middleware.errors import send_error
from ..protocol.realtime import handshake
from ..realtime.connection import Connection
from ..state import get_state
from .client_secrets import granted

router = APIRouter()

BETA_PROTOCOL = "openai-beta.realtime-v1"


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket) -> None:
    state = get_state(websocket)
    offered: list[str] = websocket.scope.get("subprotocols", [])
    # its place in the drain is the middleware's, held for the WebSocket's whole life
    lease = Lease(
        ready=state.upstream.check_ready,
        seats=state.seats,
        activity=state.supervisor.activity,  # an open session wakes the engine, keeps it awake
    )
    try:
        handshake(websocket.query_params, state.policy)
        config = granted(websocket, state)
        lease.take()
    except APIError as exc:
        await send_error(exc, websocket.scope, websocket.receive, websocket.send)
        return
    with lease:
        await websocket.accept(subprotocol="realtime" if "realtime" in offered else None)
        beta = websocket.headers.get("openai-beta", "").startswith("realtime=v1")
        await asyncio.to_thread(state.speech_model)  # the first session loads it, off the loop
        await Connection(
            state.realtime, websocket, beta or BETA_PROTOCOL in offered, config
        ).serve()
