"""POST /v1/audio/transcriptions and /v1/audio/translations: the form read into its request
model (`entrypoints.audio.protocol`), handed to the transcription service as the core's request, the
service's answer sent back."""

from __future__ import annotations

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ...errors import invalid
from ..named import NamedRoute
from ..state import get_state
from . import openapi
from . import protocol as form
from .protocol import AudioRequest, TranscriptionRequest, TranslationRequest

MAX_FORM_FIELDS = 256  # keywords[] and languages[] are a field each


async def transcriptions(request: Request) -> Response:
    return await _answer(request, TranscriptionRequest)


async def translations(request: Request) -> Response:
    return await _answer(request, TranslationRequest)


async def _answer(request: Request, model: type[AudioRequest]) -> Response:
    state = get_state(request)
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("Send the audio as multipart/form-data with a 'file' field.", "file")
    async with request.form(max_files=1, max_fields=MAX_FORM_FIELDS) as fields:
        asked = form.read(fields, model, state.policy)
        job = await state.transcription.accept(asked.transcription())
    request.state.audio_seconds = job.audio.duration  # access_log.AUDIO_SECONDS
    request_id: str = request.state.request_id
    if asked.stream:  # the events hold the audio's room until they are closed
        events = await state.transcription.stream(job, request_id)
        return StreamingResponse(
            events,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(events.aclose),  # also when the stream never started
        )
    try:
        body = await state.transcription.transcribe(job, request_id)
    finally:
        job.release()  # the answer is text now: the audio's room goes back to the budget
    if isinstance(body, str):
        return Response(body, media_type=job.request.response_format.content_type)
    return JSONResponse(body)


_MODELS: dict[object, type[AudioRequest]] = {
    transcriptions: TranscriptionRequest,
    translations: TranslationRequest,
}
routes = [
    NamedRoute("/v1/audio/transcriptions", transcriptions, methods=["POST"]),
    NamedRoute("/v1/audio/translations", translations, methods=["POST"]),
]
openapi_paths = {
    route.path: {"post": openapi.operation(_MODELS[route.endpoint])} for route in routes
}
openapi_schemas = openapi.components()  # the answers' models the operations refer to
