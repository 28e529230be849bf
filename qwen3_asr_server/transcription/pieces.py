"""Decoded audio in, transcript out: one request for a short clip, concurrent pieces otherwise.

The transcription service (`service`) decides what to ask; this is how it is asked.

A short clip that only needs text (`json`, `text`) goes upstream whole, as one request, so a
voice agent pays nothing for segmentation. Longer audio, and every request for timestamps
(`verbose_json`, `srt`, `vtt`), is cut at pauses into pieces no longer than the model's
window (where the client's `chunking_strategy` says, when it sets one); the pieces are
transcribed concurrently (vLLM batches them) and joined in order. A piece the backend did not
answer because it went away (a restart of vLLM) is sent again once it is back, when another
piece was answered already (those are kept, `Upstream.persist`); a request with nothing
answered yet gets the 503 at once instead.

`languages[]` with several entries: Qwen3-ASR either detects the language or is told one,
so a piece is transcribed as detected and, when the model heard a language outside the
list, transcribed again in the first one listed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import math
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..backend.upstream import Upstream
from ..errors import APIError
from ..model import prompt
from ..model.languages import Language
from ..model.output import LogprobFilter, clean, transcription_logprob
from ..speech import planning, segmentation
from ..speech.audio import RATE, Audio
from ..speech.segmentation import Chunking, Span
from ..speech.silero import WINDOW, Probabilities, SpeechModel
from ..speech.stoppable import Stop
from .progress import Progress
from .transcript import Segment, Transcript
from .usage import Tokens

T = TypeVar("T")
# Where a stage needs the recording cut (a diarizer: between speakers), from the audio and its
# speech probabilities: regions, each labelled, that together cover the recording
Cuts = Callable[[Audio, Probabilities], list[Span]]
# Written without spaces between words: pieces join without one.
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "yue", "th"})


@dataclass(frozen=True)
class Options:
    """How one recording is transcribed: what the model is told, where the audio is cut."""

    language: Language | None  # forced
    context: str | None
    temperature: float
    timed: bool  # segments with timestamps are wanted
    logprobs: bool  # the text tokens' log-probabilities are wanted (include[]=logprobs)
    window: float  # seconds the model (and every stage) takes at once
    concurrency: int  # pieces of this request in flight upstream
    candidates: tuple[Language, ...] = ()  # languages[] with several: the ones allowed
    chunking: Chunking | None = None  # where to cut; None: whole when it fits, else pauses
    cuts: Cuts | None = None  # where a stage needs it cut as well

    def forcing(self, language: Language) -> Options:
        return dataclasses.replace(self, language=language, candidates=())

    def outside(self, spoken: Language | None) -> bool:
        """Whether the model heard a language the client did not list."""
        return bool(self.candidates) and spoken is not None and spoken not in self.candidates


@dataclass(frozen=True)
class _Piece:
    segment: Segment
    language: Language | None  # as the model said it, or as it was forced
    tokens: Tokens


def whole(audio: Audio, options: Options) -> bool:
    """Whether the clip goes upstream as it is, without looking for pauses."""
    return (
        options.chunking is None
        and options.cuts is None
        and not options.timed
        and audio.duration <= options.window
    )


def plan(
    audio: Audio, options: Options, model: Callable[[], SpeechModel], stop: Stop | None = None
) -> list[Span]:
    """The pieces to send: the whole clip when that will do, else pieces cut at the pauses
    Silero VAD hears (~2-5 ms of CPU per second of audio: not for the event loop), inside
    the regions a stage cuts (each piece labelled as its region is)."""
    samples = audio.samples
    if whole(audio, options):
        return [] if segmentation.is_silent(samples) else [Span(0, len(samples))]
    if options.cuts is None:
        return planning.split(samples, model(), options.window, options.chunking, stop)
    probabilities = model().recording(samples, stop)
    return [
        Span(region.start + span.start, region.start + span.end, region.speaker)
        for region in options.cuts(audio, probabilities)
        for span in segmentation.split(
            probabilities[region.start // WINDOW : -(-region.end // WINDOW)],
            region.end - region.start,
            options.window,
            options.chunking,
        )
    ]


def request_body(upstream: Upstream, audio: Audio, span: Span, options: Options) -> dict[str, Any]:
    """The chat request that transcribes one piece."""
    body = prompt.transcription_request(
        model=upstream.model,
        audio=audio.wav(span.start, span.end),
        audio_format="wav",
        language=options.language,
        context=options.context,
        temperature=options.temperature,
    )
    if options.timed or options.logprobs:
        body.update(logprobs=True, return_token_ids=True)
    return body


def joiner(language: Language | None) -> str:
    """What goes between the texts of two pieces."""
    return "" if language is not None and language.code in UNSPACED_LANGUAGES else " "


async def transcribe(
    upstream: Upstream,
    audio: Audio,
    spans: list[Span],
    options: Options,
    request_id: str,
    progress: Progress,
) -> Transcript:
    slots = asyncio.Semaphore(options.concurrency)

    async def one(span: Span) -> _Piece:
        async with slots:
            piece = await _transcribe_span(upstream, audio, span, options, progress)
        progress.piece_done()
        return piece

    answered = await all_or_nothing(one(span) for span in spans)
    pieces = [piece for piece in answered if piece.segment.text]
    spoken = tuple(dict.fromkeys(piece.language for piece in pieces if piece.language))
    language = spoken[0] if spoken else options.language
    return Transcript(
        text=joiner(language).join(piece.segment.text for piece in pieces),
        language=language,
        duration=audio.duration,
        segments=[piece.segment for piece in pieces],
        logprobs=[entry for piece in pieces for entry in piece.segment.logprobs],
        tokens=sum((piece.tokens for piece in answered), Tokens()),
        spoken=spoken,
    )


async def _transcribe_span(
    upstream: Upstream, audio: Audio, span: Span, options: Options, progress: Progress
) -> _Piece:
    piece = await _ask(upstream, audio, span, options, progress)
    if not options.outside(piece.language):
        return piece
    again = await _ask(upstream, audio, span, options.forcing(options.candidates[0]), progress)
    return dataclasses.replace(again, tokens=piece.tokens + again.tokens)


async def _ask(
    upstream: Upstream, audio: Audio, span: Span, options: Options, progress: Progress
) -> _Piece:
    body = functools.partial(request_body, upstream, audio, span, options)
    attempt = functools.partial(upstream.chat, body, progress.request_id)
    answer = await upstream.persist(attempt, progress.at_stake)
    choice = _choice(answer)
    cleaned = clean(_content(choice))
    entries = (choice.get("logprobs") or {}).get("content") or []
    logprobs = [
        float(entry["logprob"])
        for entry in entries
        if isinstance(entry, dict) and math.isfinite(entry.get("logprob", math.nan))
    ]
    kept = LogprobFilter()
    start, end = span.seconds(RATE)
    segment = Segment(
        start=start,
        end=end,
        text=cleaned.text,
        tokens=[int(token) for token in choice.get("token_ids") or []],
        avg_logprob=sum(logprobs) / len(logprobs) if logprobs else 0.0,
        logprobs=[transcription_logprob(e) for e in kept.feed(entries) + kept.finish()],
        speaker=span.speaker,
    )
    language = cleaned.spoken_language or options.language
    return _Piece(segment, language, Tokens.of(answer.get("usage")))


def _choice(answer: dict[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise APIError(502, "The speech backend sent no transcript.", code="backend_error")
    return choices[0]


def _content(choice: dict[str, Any]) -> str:
    content = (choice.get("message") or {}).get("content")
    return content if isinstance(content, str) else ""


async def all_or_nothing(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """Run all at once; the first failure cancels the rest and is raised as it is."""
    pending = list(awaitables)
    if len(pending) == 1:  # the usual short clip: no task to make, wait on and cancel
        return [await pending[0]]
    tasks = [asyncio.ensure_future(awaitable) for awaitable in pending]
    try:
        if tasks:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            error = task.exception() if task.done() else None
            if error is not None:
                raise error
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)  # not gather: see streaming.TranscriptStream.close
