"""POST /v1/chat/completions: the body checked (`protocol.chat`) and made the chat service's
request, its answer sent back, whole or streamed."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.background import BackgroundTask

from ..protocol import chat
from ..protocol.body import json_body
from ..state import State

router = APIRouter()


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, state: State) -> Response:
    body = await json_body(request)
    asked = chat.read(body, state.policy).completion(body)
    request_id: str = request.state.request_id
    if asked.stream:
        events, upstream = await state.chat.stream(asked, request_id)
        return StreamingResponse(
            events,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(upstream.aclose),  # also when the stream never started
        )
    return JSONResponse(await state.chat.answer(asked, request_id))
