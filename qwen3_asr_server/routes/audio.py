"""POST /v1/audio/transcriptions and /v1/audio/translations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from .. import formats, forms, prompt
from ..auth import require_api_key
from ..cleaning import clean
from ..errors import APIError, invalid
from ..state import AppState, State

router = APIRouter(dependencies=[Depends(require_api_key)])

TRANSLATION_NOTE = (
    "Qwen3-ASR does not translate: this is the transcript in the spoken language{language}."
)


@router.post("/v1/audio/transcriptions")
async def transcriptions(request: Request, state: State) -> Response:
    return await _transcribe(request, state, translation=False)


@router.post("/v1/audio/translations")
async def translations(request: Request, state: State) -> Response:
    return await _transcribe(request, state, translation=True)


async def _transcribe(request: Request, state: AppState, *, translation: bool) -> Response:
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("Send the audio as multipart/form-data with a 'file' field.", "file")
    async with request.form(max_files=1, max_fields=32) as form:
        options = forms.parse(form, translation=translation)
        state.catalog.resolve(options.model)
        audio = await options.upload.read()
    if not audio:
        raise invalid("The audio 'file' is empty.", "file", code="empty_file")
    body = prompt.transcription_request(
        model=state.upstream.model,
        audio=audio,
        audio_format=options.audio_format,
        language=options.language,
        context=options.prompt,
        temperature=options.temperature,
    )
    answer = await state.upstream.chat(body, request.state.request_id)
    cleaned = clean(_content(answer))
    note = None
    if translation:
        spoken = f" ({cleaned.language})" if cleaned.language else ""
        note = TRANSLATION_NOTE.format(language=spoken)
    usage = None if translation else formats.token_usage(answer.get("usage"))
    return formats.transcription(cleaned.text, options.response_format, usage=usage, note=note)


def _content(answer: dict[str, Any]) -> str:
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise APIError(502, "The speech backend sent no transcript.", code="backend_error") from exc
    return content if isinstance(content, str) else ""
