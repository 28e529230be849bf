"""Realtime's routes, OpenAI's three: the session's WebSocket, a WebRTC call, an ephemeral key.

`GET /v1/realtime?intent=transcription` opens a transcription session over a WebSocket. The
handshake is checked before the WebSocket is accepted, so a refused client gets an HTTP
answer in OpenAI's error shape (where the server supports that ASGI extension), and so is the
session's lease (`capacity.lease`): a 503 while the model loads, then a 429 over
`--max-sessions` (`capacity.seats`). The session holds its lease, its seat and the engine
awake, until it ends; its place in the drain is the middleware's, held for the request's
life. Once open, the connection serves its session (`entrypoints.realtime.connection`).

`POST /v1/realtime/calls` is the WebRTC door. The body is the caller's SDP offer, alone
(`application/sdp`) or with the session it opens (`multipart/form-data`: `sdp` and
`session`, as the openai SDK sends it); the answer is 201, the SDP answer, and
`Location: /v1/realtime/calls/{call_id}`. The offer and the session are checked, the offer's
ICE candidates screened (`entrypoints.realtime.ice.screen`), and the call's lease taken (a
seat shared with WebSocket sessions; a place in the drain of its own), before a peer
connection is made. The call then runs by itself (`entrypoints.realtime.call`), holding the
lease until it ends; one whose offer cannot be answered gives it back at once. The body's
size is bounded before this (`entrypoints.middleware.body_limits`).

`POST /v1/realtime/client_secrets` mints an ephemeral key for a browser or a phone
(`entrypoints.middleware.ephemeral_keys`). Minting takes an API key, which the secret names
(the middleware refuses an ephemeral key here: one cannot mint another); the session asked for
is checked as a `session.update` would be, so a bad one is a 400 naming its field, before any
secret exists.
A session or call opened with such a key starts with the session it was minted for
(`granted`), the call's form `session` (if any) applied over it.

The key, another site's page and a draining server are refused before any of this, by the
middleware.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response, WebSocket
from starlette.datastructures import FormData, UploadFile
from starlette.requests import HTTPConnection

from ...capacity import key_seats
from ...capacity.lease import Lease
from ...capacity.seats import Seats
from ...errors import APIError
from ..doors import slice_services
from ..middleware.auth import bearer, caller, opened
from ..middleware.ephemeral_keys import ClientSecrets, Grant, is_ephemeral
from ..middleware.errors import send_error
from ..protocol.body import json_body, read
from . import call, ice, offers, protocol
from .client_secrets import ClientSecretCreate, session_config
from .connection import Connection
from .protocol import SessionConfig, handshake
from .server_events import new_id, session_object
from .services import RealtimeServices

router = APIRouter()


Services = Annotated[RealtimeServices, Depends(slice_services("realtime"))]

BETA_PROTOCOL = "openai-beta.realtime-v1"


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket, services: Services) -> None:
    offered: list[str] = websocket.scope.get("subprotocols", [])
    # its place in the drain is the middleware's, held for the WebSocket's whole life
    lease = Lease(
        ready=services.upstream.check_ready,
        own_seat=_key_seat(websocket, services),
        seats=services.seats,
        activity=services.supervisor.activity,  # an open session wakes the engine, keeps it awake
    )
    try:
        handshake(websocket.query_params, services.policy)
        config = granted(websocket, services)
        lease.take()
    except APIError as exc:
        await send_error(exc, websocket.scope, websocket.receive, websocket.send)
        return
    with lease:
        await websocket.accept(subprotocol="realtime" if "realtime" in offered else None)
        beta = websocket.headers.get("openai-beta", "").startswith("realtime=v1")
        await asyncio.to_thread(services.speech_model)  # the first session loads it, off the loop
        await Connection(services, websocket, beta or BETA_PROTOCOL in offered, config).serve()


@router.post(offers.PATH, status_code=201, response_class=Response)
async def create_call(request: Request, services: Services) -> Response:
    sdp, session = await _read(request)
    offer = offers.offer(sdp, session, services.policy, granted(request, services))
    screened = ice.screen(offer.sdp, ice.offers_loopback(services.settings.host))
    # the call's, for its whole life: the POST's place in the drain ends with the POST
    lease = Lease(
        ready=services.upstream.check_ready,
        own_seat=_key_seat(request, services),
        seats=services.seats,
        activity=services.supervisor.activity,  # an open call wakes the engine, keeps it awake
        drain=services.drain,
    ).take()
    try:
        await asyncio.to_thread(services.speech_model)  # the first session loads it, off the loop
        made = call.Call(services, request.state.request_id, offer.config)
        answer = await made.answer(screened)
    except BaseException:
        lease.give_back()
        raise
    call.start(services, made, lease)
    return Response(
        answer,
        201,
        headers={"Location": f"/v1/realtime/calls/{made.id}"},
        media_type=offers.SDP,
    )


async def _read(request: Request) -> tuple[str, str | None]:
    """The offer and the session's JSON (None without one), from either kind of body."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind == offers.SDP:
        return _text(await request.body(), "sdp"), None
    if kind != offers.FORM:
        raise offers.unsupported_type(kind)
    async with request.form(max_files=2, max_fields=2) as form:
        sdp = await _field(form, "sdp")
        if sdp is None:
            raise APIError(
                400,
                "Missing required parameter: 'sdp' (the SDP offer).",
                param="sdp",
                code="missing_required_parameter",
            )
        return sdp, await _field(form, "session")


async def _field(form: FormData, name: str) -> str | None:
    """A form field, sent as a plain field or as a part with a file name (as the SDK does)."""
    value = form.get(name)
    if isinstance(value, UploadFile):
        return _text(await value.read(), name)
    return value


def _text(data: bytes, name: str) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise APIError(400, f"'{name}' is not UTF-8 text.", param=name) from None


@router.post("/v1/realtime/client_secrets")
async def create_client_secret(request: Request, services: Services) -> dict[str, Any]:
    body = await json_body(request)
    asked: ClientSecretCreate = read(ClientSecretCreate, body, text=False)
    config = session_config(asked.session)
    protocol.check(config, services.policy)
    expires_at = int(time.time()) + asked.expires_after.seconds
    secrets = ClientSecrets(services.keys.current)
    value = secrets.mint(Grant(expires_at, asked.session), caller(request.scope))
    session = session_object(config, new_id("sess"))
    return {"value": value, "expires_at": expires_at, "session": session}


def _key_seat(connection: HTTPConnection, services: RealtimeServices) -> Seats | None:
    """The seat of the key the session came with, when it has `max_sessions` (an ephemeral
    key's is the key's that minted it)."""
    key = caller(connection.scope)
    if key is None:
        return None
    return key_seats.seat(services.key_seats, key.name, key.max_sessions, services.metrics)


def granted(connection: HTTPConnection, services: RealtimeServices) -> SessionConfig | None:
    """The configuration the ephemeral key of a Realtime handshake was minted for; None when
    the client came with the API key (or none). OpenAI's 401 for a key that is expired or not
    this server's, even on a server without `--api-key`: the session it asks for is unknown."""
    token = bearer(connection.scope)
    if not is_ephemeral(token):
        return None
    grant = opened(connection.scope, token, services.keys.current)
    config = session_config(grant.session)
    protocol.check(config, services.policy)
    return config
