"""`POST /v1/realtime/calls`: OpenAI's WebRTC door to a Realtime transcription session.

The body is the caller's SDP offer, alone (`application/sdp`) or with the session it opens
(`multipart/form-data`: `sdp` and `session`, as the openai SDK sends it); the answer is 201,
the SDP answer, and `Location: /v1/realtime/calls/{call_id}`. A call made with an ephemeral key
starts with the session the key was minted for, the form's `session` (if any) applied over
it, as a `session.update` would be. The offer and the session are
checked, the offer's ICE candidates screened (`realtime.ice.screen`), and the call's lease
taken (`capacity.lease`: a 503 while the model loads, a seat of `--max-sessions`, shared with
WebSocket sessions, so that a full server answers 429, the engine kept awake, a place in the
drain), before a peer connection is made. The call then runs by itself (`realtime.call`),
holding the lease until it ends; one whose offer cannot be answered gives it back at once.
The key, the drain and the body's size (`middleware.body_limits`) are checked before this,
as for any route.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response
from starlette.datastructures import FormData, UploadFile

from ..capacity.lease import Lease
from ..errors import APIError
from ..protocol import calls as protocol
from ..realtime import call, ice
from ..state import State
from .client_secrets import granted

router = APIRouter()


@router.post(protocol.PATH, status_code=201, response_class=Response)
async def create_call(request: Request, state: State) -> Response:
    sdp, session = await _read(request)
    offer = protocol.offer(sdp, session, state.policy, granted(request, state))
    screened = ice.screen(offer.sdp, ice.offers_loopback(state.settings.host))
    # the call's, for its whole life: the POST's place in the drain ends with the POST
    lease = Lease(
        ready=state.upstream.check_ready,
        seats=state.seats,
        activity=state.supervisor.activity,  # an open call wakes the engine, keeps it awake
        drain=state.drain,
    ).take()
    try:
        await asyncio.to_thread(state.speech_model)  # the first session loads it, off the loop
        made = call.Call(state.realtime, request.state.request_id, offer.config)
        answer = await made.answer(screened)
    except BaseException:
        lease.give_back()
        raise
    call.start(state.realtime, made, lease)
    return Response(
        answer,
        201,
        headers={"Location": f"/v1/realtime/calls/{made.id}"},
        media_type=protocol.SDP,
    )


async def _read(request: Request) -> tuple[str, str | None]:
    """The offer and the session's JSON (None without one), from either kind of body."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind == protocol.SDP:
        return _text(await request.body(), "sdp"), None
    if kind != protocol.FORM:
        raise protocol.unsupported_type(kind)
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
