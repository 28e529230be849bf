"""Decoded audio in, transcript out: one request for a short clip, concurrent pieces otherwise.

A short clip that only needs text (`json`, `text`) goes upstream whole, as one request, so a
voice agent pays nothing for segmentation. Longer audio, and every request for timestamps
(`verbose_json`, `srt`, `vtt`), is cut at pauses into pieces no longer than the model's
window (where the client's `chunking_strategy` says, when it sets one); the pieces are
transcribed concurrently (vLLM batches them) and joined in order.

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

from .. import alignment, prompt, segmentation
from ..alignment import Word
from ..audio import RATE, Audio
from ..backend.aligner import Aligner
from ..backend.upstream import Upstream
from ..errors import APIError
from ..languages import Language
from ..model_output import LogprobFilter, clean, transcription_logprob
from ..segmentation import Chunking, Span
from ..settings import Settings
from ..silero import SpeechModel
from .usage import Tokens

T = TypeVar("T")
# Written without spaces between words: pieces join without one.
UNSPACED_LANGUAGES = frozenset({"Chinese", "Japanese", "Cantonese", "Thai"})
# Subtitles without word times: every pause this long ends a piece, so cues follow speech
SUBTITLE_CHUNKING = Chunking(min_pause=0.7, every_pause=True)


@dataclass(frozen=True)
class Options:
    language: Language | None
    context: str | None
    temperature: float
    timed: bool  # segments with timestamps are wanted
    logprobs: bool  # the text tokens' log-probabilities are wanted (include[]=logprobs)
    window: float  # seconds the model takes at once
    concurrency: int  # pieces of this request in flight upstream
    aligner: Aligner | None = None  # set when word times are wanted (words, or cues)
    candidates: tuple[Language, ...] = ()  # languages[] with several: the ones allowed
    chunking: Chunking | None = None  # where to cut; None: whole when it fits, else pauses

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        language: Language | None,
        context: str | None,
        temperature: float = 0.0,
        timed: bool = False,
        logprobs: bool = False,
        aligner: Aligner | None = None,
        candidates: tuple[Language, ...] = (),
        chunking: Chunking | None = None,
    ) -> Options:
        """A request's options with the server's window and concurrency; a piece that is to
        be aligned is aligned in one pass, so it must fit the aligner's window too."""
        window = settings.segment_seconds
        if aligner is not None:
            window = min(window, alignment.MAX_SECONDS)
        return cls(
            language=language,
            context=context,
            temperature=temperature,
            timed=timed,
            logprobs=logprobs,
            window=window,
            concurrency=settings.segment_concurrency,
            aligner=aligner,
            candidates=candidates,
            chunking=chunking,
        )

    def forcing(self, language: Language) -> Options:
        return dataclasses.replace(self, language=language, candidates=())

    def outside(self, spoken: str | None) -> bool:
        """Whether the model heard a language the client did not list."""
        names = {language.name for language in self.candidates}
        return bool(names) and spoken is not None and spoken not in names


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    tokens: list[int]  # the ids the model generated, when the backend returns them
    avg_logprob: float  # mean log-probability of those tokens (0.0 when unknown)
    logprobs: list[dict[str, Any]]  # OpenAI's {token, logprob, bytes} for the text's tokens
    words: list[Word] | None = None  # its units' times, when aligned


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str | None  # English name, as the model said it or as it was forced
    duration: float
    segments: list[Segment]
    logprobs: list[dict[str, Any]]
    tokens: Tokens = dataclasses.field(default_factory=Tokens)
    words: list[Word] | None = None  # every segment's, when aligned
    spoken: tuple[str, ...] = ()  # every language heard (English names), first heard first


@dataclass(frozen=True)
class _Piece:
    segment: Segment
    language: str | None  # as the model said it, or as it was forced
    tokens: Tokens


def whole(audio: Audio, options: Options) -> bool:
    """Whether the clip goes upstream as it is, without looking for pauses."""
    return options.chunking is None and not options.timed and audio.duration <= options.window


def plan(audio: Audio, options: Options, model: Callable[[], SpeechModel]) -> list[Span]:
    """The pieces to send: the whole clip when that will do, else pieces cut at the pauses
    Silero VAD hears (~2-5 ms of CPU per second of audio: not for the event loop)."""
    samples = audio.samples
    if whole(audio, options):
        return [] if segmentation.is_silent(samples) else [Span(0, len(samples))]
    probabilities = model().recording(samples)
    return segmentation.split(probabilities, len(samples), options.window, options.chunking)


async def pieces(
    audio: Audio, options: Options, model: Callable[[], SpeechModel], slots: asyncio.Semaphore
) -> list[Span]:
    """`plan` from the event loop: in a thread, among the `slots` CPU-bound jobs (decoding),
    when it listens for pauses."""
    if whole(audio, options):
        return plan(audio, options, model)
    async with slots:
        return await asyncio.to_thread(plan, audio, options, model)


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


def joiner(language: str | None) -> str:
    """What goes between the texts of two pieces."""
    return "" if language in UNSPACED_LANGUAGES else " "


async def transcribe(
    upstream: Upstream, audio: Audio, spans: list[Span], options: Options, request_id: str
) -> Transcript:
    slots = asyncio.Semaphore(options.concurrency)

    async def one(span: Span) -> _Piece:
        async with slots:
            return await _transcribe_span(upstream, audio, span, options, request_id)

    answered = await _all_or_nothing(one(span) for span in spans)
    pieces = [piece for piece in answered if piece.segment.text]
    spoken = tuple(dict.fromkeys(piece.language for piece in pieces if piece.language))
    language = spoken[0] if spoken else (options.language.name if options.language else None)
    separator = joiner(language)
    segments = [piece.segment for piece in pieces]
    words = None
    if options.aligner is not None:
        aligner = options.aligner
        segments = await _all_or_nothing(
            _align(aligner, audio, each, language, slots) for each in segments
        )
        words = [word for segment in segments for word in segment.words or ()]
    return Transcript(
        text=separator.join(piece.segment.text for piece in pieces),
        language=language,
        duration=audio.duration,
        segments=segments,
        logprobs=[entry for piece in pieces for entry in piece.segment.logprobs],
        tokens=sum((piece.tokens for piece in answered), Tokens()),
        words=words,
        spoken=spoken,
    )


async def _align(
    aligner: Aligner,
    audio: Audio,
    segment: Segment,
    language: str | None,
    slots: asyncio.Semaphore,
) -> Segment:
    """The segment with its words, running from its first word's start to its last word's
    end: the pause-cut piece included silence the words do not. A piece is at most the
    model's window, so within the aligner's limit."""
    start, end = round(segment.start * RATE), round(segment.end * RATE)
    async with slots:
        words = await aligner.align(audio.wav(start, end), segment.text, language, segment.start)
    if not words:
        return dataclasses.replace(segment, words=[])
    return dataclasses.replace(segment, start=words[0].start, end=words[-1].end, words=words)


async def _transcribe_span(
    upstream: Upstream, audio: Audio, span: Span, options: Options, request_id: str
) -> _Piece:
    piece = await _ask(upstream, audio, span, options, request_id)
    if not options.outside(piece.language):
        return piece
    again = await _ask(upstream, audio, span, options.forcing(options.candidates[0]), request_id)
    return dataclasses.replace(again, tokens=piece.tokens + again.tokens)


async def _ask(
    upstream: Upstream, audio: Audio, span: Span, options: Options, request_id: str
) -> _Piece:
    answer = await upstream.chat(
        functools.partial(request_body, upstream, audio, span, options), request_id
    )
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
    )
    forced = options.language.name if options.language else None
    return _Piece(segment, cleaned.spoken_language or forced, Tokens.of(answer.get("usage")))


def _choice(answer: dict[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise APIError(502, "The speech backend sent no transcript.", code="backend_error")
    return choices[0]


def _content(choice: dict[str, Any]) -> str:
    content = (choice.get("message") or {}).get("content")
    return content if isinstance(content, str) else ""


async def _all_or_nothing(awaitables: Iterable[Awaitable[T]]) -> list[T]:
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
