"""POST /v1/chat/completions: vLLM's chat endpoint with Qwen3-ASR's answers cleaned.

For context-primed transcription: the client sends its own system turn and an
`input_audio` / `audio_url` part; the answer comes back without the language prefix,
whole or streamed, however the stream splits the prefix.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from ..auth import require_api_key
from ..cleaning import StreamCleaner, clean
from ..errors import invalid
from ..state import State

router = APIRouter(dependencies=[Depends(require_api_key)])


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, state: State) -> Response:
    try:
        body = await request.json()
    except ValueError as exc:
        raise invalid("The request body is not valid JSON.", None, code="invalid_json") from exc
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.", None)
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise invalid("'messages' must be a non-empty array.", "messages")
    model = body.get("model")
    served = state.catalog.resolve(model if isinstance(model, str) else None)
    body["model"] = state.upstream.model
    request_id = request.state.request_id
    if body.get("stream"):
        events = await state.upstream.chat_stream(body, request_id)
        return StreamingResponse(
            _cleaned_stream(events, served),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )
    answer = await state.upstream.chat(body, request_id)
    for choice in answer.get("choices") or []:
        message = choice.get("message") or {}
        if isinstance(message.get("content"), str):
            message["content"] = clean(message["content"]).text
    answer["model"] = served
    return JSONResponse(answer)


async def _cleaned_stream(events: AsyncIterator[dict[str, Any]], served: str) -> AsyncIterator[str]:
    cleaners: defaultdict[int, StreamCleaner] = defaultdict(StreamCleaner)
    async for event in events:
        if "error" in event:
            yield _sse(event)
            return
        for choice in event.get("choices") or []:
            cleaner = cleaners[choice.get("index", 0)]
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str):
                delta["content"] = cleaner.feed(content)
            if choice.get("finish_reason") is not None:
                held = cleaner.finish()
                if held:
                    delta["content"] = (delta.get("content") or "") + held
        event["model"] = served
        yield _sse(event)
    yield "data: [DONE]\n\n"


def _sse(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
