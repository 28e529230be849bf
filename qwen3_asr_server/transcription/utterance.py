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
left before it is not counted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from ..metrics import Protocol
from ..model.languages import Language
from ..speech.audio import Audio
from .pieces import Cuts
from .progress import Progress
from .service import TranscriptionService
from .streaming import TranscriptStream


@dataclass(frozen=True)
class Asked:
    """What a live door's client asked of one utterance: a door takes no response format,
    no temperature and no stage but the speaker cuts a diarizing session makes."""

    language: Language | None = None  # forced; None: the model names it
    context: str | None = None
    logprobs: bool = False
    candidates: tuple[Language, ...] = ()  # the languages it may be in; () any
    cuts: Cuts | None = None


@asynccontextmanager
async def transcribing(
    service: TranscriptionService,
    spoken: Audio,
    asked: Asked,
    protocol: Protocol,
    request_id: str,
) -> AsyncIterator[TranscriptStream]:
    """The utterance's stream, started; an APIError when it cannot be (see the module)."""
    service.upstream.check_ready()
    options = service.options(
        language=asked.language,
        context=asked.context,
        logprobs=asked.logprobs,
        candidates=asked.candidates,
        cuts=asked.cuts,
    )
    spans = await service.plan(spoken, options)
    progress = Progress(service.metrics, request_id, len(spans), spoken.duration)
    stream = TranscriptStream(service.upstream, spoken, spans, options, progress)
    try:
        await stream.start()
        yield stream
        if stream.text is not None:  # before the close waits: an answer sent is counted
            service.finished(spoken.duration, stream.tokens, protocol, stream.text, request_id)
    finally:
        await stream.close()
