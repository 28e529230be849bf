"""Decoded audio in, transcript out: one request for a short clip, concurrent pieces otherwise.

A short clip that only needs text (`json`, `text`) goes upstream whole, as one request, so a
voice agent pays nothing for segmentation. Longer audio, and every request for timestamps
(`verbose_json`, `srt`, `vtt`), is cut at pauses into pieces no longer than the model's
window; the pieces are transcribed concurrently (vLLM batches them) and joined in order.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from . import prompt, segmentation
from .audio import RATE, Audio
from .cleaning import NO_SPEECH, clean
from .errors import APIError
from .languages import Language
from .segmentation import Span
from .upstream import Upstream

T = TypeVar("T")
# Written without spaces between words: pieces join without one.
UNSPACED_LANGUAGES = frozenset({"Chinese", "Japanese", "Cantonese", "Thai"})


@dataclass(frozen=True)
class Options:
    language: Language | None
    context: str | None
    temperature: float
    timed: bool  # segments with timestamps are wanted
    window: float  # seconds the model takes at once
    concurrency: int  # pieces of this request in flight upstream


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    tokens: list[int]  # the ids the model generated, when the backend returns them
    avg_logprob: float  # mean log-probability of those tokens (0.0 when unknown)


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str | None  # English name, as the model said it or as it was forced
    duration: float
    segments: list[Segment]
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class _Piece:
    segment: Segment
    language: str | None
    prompt_tokens: int
    completion_tokens: int


async def transcribe(
    upstream: Upstream, audio: Audio, options: Options, request_id: str
) -> Transcript:
    if not options.timed and audio.duration <= options.window:
        spans = [] if segmentation.is_silent(audio.samples) else [Span(0, len(audio.samples))]
    else:
        spans = segmentation.split(audio.samples, RATE, options.window)
    slots = asyncio.Semaphore(options.concurrency)

    async def one(span: Span) -> _Piece:
        async with slots:
            return await _transcribe_span(upstream, audio, span, options, request_id)

    pieces = [piece for piece in await _all(one(span) for span in spans) if piece.segment.text]
    forced = options.language.name if options.language else None
    language = forced or next((piece.language for piece in pieces if piece.language), None)
    separator = "" if language in UNSPACED_LANGUAGES else " "
    return Transcript(
        text=separator.join(piece.segment.text for piece in pieces),
        language=language,
        duration=audio.duration,
        segments=[piece.segment for piece in pieces],
        prompt_tokens=sum(piece.prompt_tokens for piece in pieces),
        completion_tokens=sum(piece.completion_tokens for piece in pieces),
    )


async def _transcribe_span(
    upstream: Upstream, audio: Audio, span: Span, options: Options, request_id: str
) -> _Piece:
    body = prompt.transcription_request(
        model=upstream.model,
        audio=audio.wav(span.start, span.end),
        audio_format="wav",
        language=options.language,
        context=options.context,
        temperature=options.temperature,
    )
    if options.timed:
        body.update(logprobs=True, return_token_ids=True)
    answer = await upstream.chat(body, request_id)
    choice = _choice(answer)
    cleaned = clean(_content(choice))
    logprobs = [
        float(entry["logprob"])
        for entry in (choice.get("logprobs") or {}).get("content") or []
        if isinstance(entry, dict) and math.isfinite(entry.get("logprob", math.nan))
    ]
    usage = answer.get("usage") or {}
    start, end = span.seconds(RATE)
    segment = Segment(
        start=start,
        end=end,
        text=cleaned.text,
        tokens=[int(token) for token in choice.get("token_ids") or []],
        avg_logprob=sum(logprobs) / len(logprobs) if logprobs else 0.0,
    )
    language = cleaned.language if cleaned.language != NO_SPEECH else None
    return _Piece(
        segment,
        language.strip() if language else None,
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
    )


def _choice(answer: dict[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise APIError(502, "The speech backend sent no transcript.", code="backend_error")
    return choices[0]


def _content(choice: dict[str, Any]) -> str:
    content = (choice.get("message") or {}).get("content")
    return content if isinstance(content, str) else ""


async def _all(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """Run all at once; the first failure cancels the rest and is raised as it is."""
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
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
        await asyncio.gather(*tasks, return_exceptions=True)
