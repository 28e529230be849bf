"""POST /v1/audio/transcriptions and /v1/audio/translations."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request, Response

from .. import audio, formats, forms, limits
from ..auth import require_api_key
from ..errors import invalid
from ..state import AppState, State
from ..transcribe import Options, Transcript, transcribe

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
    settings = state.settings
    async with request.form(max_files=1, max_fields=32) as form:
        options = forms.parse(form, translation=translation)
        state.catalog.resolve(options.model)
        limits.check_upload(options.upload, state.upload_limit)
        if not options.upload.size:
            raise invalid("The audio 'file' is empty.", "file", code="empty_file")
        state.upstream.check_ready()  # no decoding for a backend that cannot answer
        async with state.decoding:
            decoded = await asyncio.to_thread(
                audio.decode, options.upload.file, settings.max_audio_seconds
            )
    transcript = await transcribe(
        state.upstream,
        decoded,
        Options(
            language=options.language,
            context=options.prompt,
            temperature=options.temperature,
            timed=options.response_format in forms.TIMED_FORMATS,
            window=settings.segment_seconds,
            concurrency=settings.segment_concurrency,
        ),
        request.state.request_id,
    )
    _count(state, transcript)
    note = None
    if translation:
        spoken = f" ({transcript.language})" if transcript.language else ""
        note = TRANSLATION_NOTE.format(language=spoken)
    return formats.render(
        transcript,
        options.response_format,
        task="translate" if translation else "transcribe",
        temperature=options.temperature,
        note=note,
    )


def _count(state: AppState, transcript: Transcript) -> None:
    metrics = state.metrics
    metrics.audio_seconds.inc(transcript.duration)
    metrics.tokens.labels(kind="prompt").inc(transcript.prompt_tokens)
    metrics.tokens.labels(kind="completion").inc(transcript.completion_tokens)
