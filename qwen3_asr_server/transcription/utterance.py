"""One utterance of a live front door (a Realtime session's, a Wyoming command's), transcribed
as it streams: the one way in for a door that answers while the model writes.

`transcribing` does, in the order uploads have it, what every such utterance needs: the speech
model's readiness (a 503 while vLLM loads or restarts, before the audio is planned), the
options (what the client asked, with this server's window and concurrency), the plan, and
the stream, started. The door reads the stream's text inside the `async with` and answers its
client there; the stream is closed however the block ends (a backend failing mid-stream, the
client gone, the session cancelled). A block that ends with the whole text heard finishes
the utterance: its audio and tokens in the metrics under the door's protocol, its text in the
log with --log-transcripts. That comes after the door's answer, so an utterance whose client
left before it is not counted. Each utterance is a span of its session's trace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..model.languages import Language
from ..observability.metrics import Protocol
from ..observability.tracing import Value
from ..speech.audio import Audio
from .formats import FORMATS
from .pieces import Cuts
from .request import Request
from .service import TranscriptionService
from .streaming import TranscriptStream


def utterance(
    spoken: Audio,
    *,
    language: Language | None = None,
    context: str | None = None,
    logprobs: bool = False,
    candidates: tuple[Language, ...] = (),
) -> Request:
    """A live door's utterance as the core's request: its samples, and what its client may
    choose (a forced language, the context, logprobs, the languages it may be in). A door
    renders its own events, so the request's format is plain json, which asks for no stage."""
    return Request(
        audio=spoken,
        response_format=FORMATS["json"],
        forced=language,
        context=context,
        logprobs=logprobs,
        candidates=candidates,
    )


@asynccontextmanager
async def transcribing(
    service: TranscriptionService,
    request: Request,
    protocol: Protocol,
    request_id: str,
    cuts: Cuts | None = None,
) -> AsyncIterator[TranscriptStream]:
    """The utterance's stream, started; an APIError when it cannot be (see the module).
    `cuts`: where a diarizing session's speakers change, for pieces to end there."""
    spoken = request.audio
    if not isinstance(spoken, Audio):
        raise TypeError("a live utterance is its samples, decoded as they came")
    service.upstream.check_ready()
    options = service.options(
        language=request.forced,
        context=request.context,
        logprobs=request.logprobs,
        candidates=request.candidates,
        cuts=cuts,
    )
    attributes: dict[str, Value] = {"qwen3_asr.protocol": protocol}
    attributes["qwen3_asr.request_id"] = request_id
    attributes["qwen3_asr.audio_seconds"] = round(spoken.duration, 3)
    with service.tracing.span("utterance", attributes=attributes):
        stream = await service.planned(spoken, options, request_id)
        try:
            await stream.start()
            yield stream
            if stream.text is not None:  # before the close waits: an answer sent is counted
                service.finished(spoken.duration, stream.tokens, protocol, stream.text, request_id)
        finally:
            await stream.close()
