"""POST /v1/audio/transcriptions and /v1/audio/translations."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .. import alignment, audio, prompt
from ..backend.aligner import Aligner
from ..errors import invalid
from ..middleware import access_log, body_limits
from ..state import AppState, get_state
from ..transcription import form, openapi, responses
from ..transcription.streaming import TranscriptStream
from ..transcription.transcribe import SUBTITLE_CHUNKING, Options, pieces, transcribe
from .named import NamedRoute

MAX_FORM_FIELDS = 256  # keywords[] and languages[] are a field each
# A plain 16 kHz mono PCM WAV up to this size (32 s) is read in the event loop: a copy of
# it costs less than the hop to a decoding thread and back.
INLINE_WAV_BYTES = 1 << 20
TRANSLATION_NOTE = (
    "Qwen3-ASR does not translate: this is the transcript in the spoken language{language}."
)


async def transcriptions(request: Request) -> Response:
    return await _transcribe(request, translation=False)


async def translations(request: Request) -> Response:
    return await _transcribe(request, translation=True)


routes = [
    NamedRoute("/v1/audio/transcriptions", transcriptions, methods=["POST"]),
    NamedRoute("/v1/audio/translations", translations, methods=["POST"]),
]
openapi_paths = {
    route.path: {"post": openapi.operation(translation=route.endpoint is translations)}
    for route in routes
}


async def _transcribe(request: Request, *, translation: bool) -> Response:
    state = get_state(request)
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("Send the audio as multipart/form-data with a 'file' field.", "file")
    settings = state.settings
    async with request.form(max_files=1, max_fields=MAX_FORM_FIELDS) as fields:
        options = form.parse(fields, translation=translation)
        state.catalog.resolve(options.model)
        context = _context(state, options)
        aligner = _aligner_for(state, options)
        body_limits.check_upload(options.upload, settings.upload_bytes)
        if not options.upload.size:
            raise invalid("The audio 'file' is empty.", "file", code="empty_file")
        state.upstream.check_ready()  # no decoding for a backend that cannot answer
        if aligner is not None:
            aligner.check_ready()
        decoded = None
        if options.upload.size <= INLINE_WAV_BYTES:
            decoded = audio.plain_wav(options.upload.file, settings.max_audio_seconds)
        if decoded is None:
            async with state.decoding:
                decoded = await asyncio.to_thread(
                    audio.decode, options.upload.file, settings.max_audio_seconds
                )
    request.state.audio_seconds = decoded.duration  # access_log.AUDIO_SECONDS
    chunking = options.chunking
    if chunking is None and aligner is None and options.response_format in ("srt", "vtt"):
        chunking = SUBTITLE_CHUNKING
    work = Options.from_settings(
        settings,
        language=options.language,
        context=context,
        temperature=options.temperature,
        timed=options.response_format in form.TIMED_FORMATS,
        logprobs=options.logprobs,
        aligner=aligner,
        candidates=options.candidates,
        chunking=chunking,
    )
    spans = await pieces(decoded, work, state.speech_model, state.decoding)
    if options.stream:
        stream = TranscriptStream(state.upstream, decoded, spans, work, request.state.request_id)
        await stream.start()
        return StreamingResponse(
            _counted(state, stream, decoded.duration, request.state.request_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(stream.close),  # also when the stream never started
        )
    transcript = await transcribe(state.upstream, decoded, spans, work, request.state.request_id)
    state.metrics.transcribed(transcript.duration, transcript.tokens)
    if settings.log_transcripts:
        access_log.log_transcript(request.state.request_id, transcript.text)
    note = None
    if translation:
        spoken = f" ({transcript.language})" if transcript.language else ""
        note = TRANSLATION_NOTE.format(language=spoken)
    return responses.render(
        transcript,
        options.response_format,
        task="translate" if translation else "transcribe",
        temperature=options.temperature,
        logprobs=options.logprobs,
        note=note,
        granularities=options.granularities,
        # as OpenAI bills them: gpt-* transcribe models in tokens, whisper-1 in seconds
        by_duration=not (options.model or "").startswith("gpt-"),
    )


def _context(state: AppState, options: form.AudioRequest) -> str | None:
    """The prompt and keywords as the model's context; a 400 if they could not fit."""
    context = prompt.context(options.prompt, options.keywords)
    size = len(context.encode()) if context else 0
    settings = state.settings
    limit = prompt.context_limit(settings.max_model_len, settings.segment_seconds)
    if size > limit:
        param = "keywords" if options.keywords else "prompt"
        raise invalid(prompt.context_too_long(size, limit), param, code="context_too_long")
    return context


def _aligner_for(state: AppState, options: form.AudioRequest) -> Aligner | None:
    """The aligner, when this request needs word times: for its `words`, or, with an aligner
    on, for subtitle cues cut at sentence ends (which fall back to one cue per segment in a
    language the aligner does not know). A 400 when words cannot be had."""
    language = options.language.name if options.language else None
    alignable = language is None or language in alignment.LANGUAGES
    if "word" not in options.granularities:
        subtitles = options.response_format in ("srt", "vtt")
        return state.aligner if subtitles and alignable else None
    if state.aligner is None:
        raise invalid(
            "Word timestamps need Qwen3-ForcedAligner, which this server was not started "
            "with: start it with --aligner Qwen/Qwen3-ForcedAligner-0.6B (or --aligner-url "
            "pointing at a vLLM that serves it). timestamp_granularities[]=segment works "
            "without it.",
            "timestamp_granularities",
            code="unsupported_value",
        )
    if not alignable:
        raise invalid(
            f"Word timestamps are not available for {language}: Qwen3-ForcedAligner knows "
            f"{', '.join(sorted(alignment.LANGUAGES))}. timestamp_granularities[]=segment "
            "works for every language.",
            "timestamp_granularities",
            code="unsupported_language",
        )
    return state.aligner


async def _counted(
    state: AppState, stream: TranscriptStream, seconds: float, request_id: str
) -> AsyncIterator[str]:
    async for event in stream.events():
        yield event
    state.metrics.transcribed(seconds, stream.tokens)
    if state.settings.log_transcripts and stream.text is not None:
        access_log.log_transcript(request_id, stream.text)
