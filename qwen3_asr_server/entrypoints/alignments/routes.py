"""POST /v1/audio/alignments: a recording and the text said in it, the text's words timed
(`entrypoints.alignments.service`) and answered in the word-timestamp shapes
(`entrypoints.alignments.answers`).

The text is the client's, up to 300,000 characters: reading it into words and rendering its
words are done in a thread, so that the event loop answers others meanwhile."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...errors import invalid
from ..audio import openapi
from ..audio import protocol as form
from ..named import NamedRoute
from ..state import get_state
from .answers import ANSWERS, FORMATS_ALIGNED
from .protocol import AlignmentRequest
from .service import Alignments

PATH = "/v1/audio/alignments"
MAX_FORM_FIELDS = 16


async def alignments(request: Request) -> Response:
    state = get_state(request)
    aligning = Alignments(state.transcription, state.aligner)
    aligning.check_ready()  # without an aligner nothing in the form matters
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("Send the audio as multipart/form-data with a 'file' field.", "file")
    async with request.form(max_files=1, max_fields=MAX_FORM_FIELDS) as fields:
        asked = await asyncio.to_thread(form.read, fields, AlignmentRequest, state.policy)
        job = await state.transcription.accept(asked.transcription(), asr=False)
    request.state.audio_seconds = job.audio.duration  # access_log.AUDIO_SECONDS
    try:
        transcript = await aligning.align(
            job.audio, asked.text, asked.forced, request.state.request_id
        )
    finally:
        job.release()
    kind = asked.response_format
    body = await asyncio.to_thread(kind.render, transcript, job.request)
    if isinstance(body, str):
        return Response(body, media_type=kind.content_type)
    return JSONResponse(body)


def _operation() -> dict[str, Any]:
    """The OpenAPI operation: the form's fields, and per format what it answers."""
    fields = openapi.fields(AlignmentRequest)
    body = {"type": "object", "required": ["file", "text"], "properties": fields}
    content = openapi.formats(FORMATS_ALIGNED.values(), ANSWERS)
    answers = openapi.answers(content, "The text's words with their times.")
    return {
        "summary": "Time a given text in its recording (Qwen3-ForcedAligner)",
        "operationId": "alignments",
        "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": body}}},
        "responses": answers,
    }


routes = [NamedRoute(PATH, alignments, methods=["POST"])]
openapi_paths = {PATH: {"post": _operation()}}
openapi_schemas = openapi.schemas(ANSWERS)
