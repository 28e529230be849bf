"""POST /v1/chat/completions: the body checked (`entrypoints.chat.protocol`) and made the chat
service's request, its answer sent back, whole or streamed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.background import BackgroundTask

from ..doors import slice_services
from ..protocol.body import json_body
from ..state import State
from . import protocol as chat
from .service import ChatService

router = APIRouter()
Service = Annotated[ChatService, Depends(slice_services("chat"))]


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, state: State, service: Service) -> Response:
    body = await json_body(request)
    asked = chat.read(body, state.policy).completion(body)
    request_id: str = request.state.request_id
    if asked.stream:
        events, upstream = await service.stream(asked, request_id)
        return StreamingResponse(
            events,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(upstream.aclose),  # also when the stream never started
        )
    return JSONResponse(await service.answer(asked, request_id))
