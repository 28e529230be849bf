"""stream=true: OpenAI's `transcript.text.delta` / `transcript.text.done` events; for
`diarized_json`, each piece's deltas name their segment (`segment_id`), and each finished piece
is a `transcript.text.segment` event with its speaker.

vLLM streams chat chunks that still carry `language X<asr_text>`, split anywhere; clients
expect OpenAI's events with clean text. The pieces of a long recording stream from vLLM
concurrently, each into a queue of its own, and the queues are read one after the other, so
piece N+1's deltas never reach the client before piece N's. A piece in a language the
client did not list (`languages[]`) is dropped before any of its text is sent, and streamed
again in the first one listed: the model names the language before it writes text. A piece
whose backend went away mid-stream is streamed again once it is back, and only the text past
what the client already has is sent (the model at temperature 0 says the same again); before
any text of the request has come, the backend's going away is the 503 at once.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from ..backend.failures import SPEECH_BACKEND
from ..backend.upstream import EventStream, Upstream
from ..errors import APIError, unavailable
from ..model.languages import Language
from ..model.output import LogprobFilter, StreamCleaner, transcription_logprob
from ..speech.audio import RATE, Audio
from ..speech.segmentation import Span
from .pieces import Options, joiner, request_body
from .progress import Progress
from .render import diarized_segment
from .responses import Logprob, TranscriptionTextDeltaEvent, TranscriptionTextDoneEvent, heard
from .transcript import Segment
from .usage import Tokens


@dataclass
class _Item:
    """What one piece's stream produced next: text, its end, or its failure; or, before
    any text, that it is in a language the client did not list."""

    text: str = ""
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    language: Language | None = None
    end: bool = False
    tokens: Tokens = field(default_factory=Tokens)
    error: APIError | None = None
    outside: bool = False


def sse(event: dict[str, Any]) -> str:
    return f"data: {orjson.dumps(event).decode()}\n\n"


class TranscriptStream:
    """The events of one streamed transcription; `start()` before iterating.

    `start()` waits for the first piece's first answer, so that a backend that refuses the
    request at once is still an HTTP error, not an error event in a 200 stream.
    """

    def __init__(
        self,
        upstream: Upstream,
        audio: Audio,
        spans: list[Span],
        options: Options,
        progress: Progress,
        labelled: bool = False,
    ):
        self.upstream = upstream
        self.labelled = labelled  # segment ids on the deltas, and segment events
        self.audio = audio
        self.options = options
        self.progress = progress
        self.spans = spans
        self.queues: list[asyncio.Queue[_Item]] = [asyncio.Queue() for _ in self.spans]
        self.tasks: list[asyncio.Task[None]] = []
        self.closing = False
        self.first: _Item | None = None
        self.tokens = Tokens()  # totals, known once the events are through
        self.spoken: list[Language] = []  # the languages heard, first heard first
        self.text: str | None = None  # the whole text, once it is through
        self.segments: list[Segment] = []  # the pieces through that said something

    async def start(self) -> None:
        slots = asyncio.Semaphore(self.options.concurrency)
        self.tasks = [
            asyncio.create_task(self._piece(span, queue, slots))
            for span, queue in zip(self.spans, self.queues, strict=True)
        ]
        if self.queues:
            try:
                self.first = await self.queues[0].get()
            except BaseException:
                await self.close()
                raise
            if self.first.error is not None:
                await self.close()
                raise self.first.error

    async def close(self) -> None:
        """Stop every piece still streaming; their upstream requests are cancelled."""
        # Once: a second cancellation would interrupt a piece closing its upstream request
        if not self.closing:
            self.closing = True
            for task in self.tasks:
                task.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks)  # not gather: a cancelled gather cancels them again

    async def texts(self) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
        """The clean text as it comes, with its tokens' logprobs, the pieces joined in order;
        raises the APIError of a piece that failed. `text` and the token totals are set once
        it is through; the pieces' streams are closed either way."""
        async for text, logprobs in self.pieces():
            if text is not None:
                yield text, logprobs

    async def pieces(self) -> AsyncIterator[tuple[str | None, list[dict[str, Any]]]]:
        """`texts`, and None where a piece ends: `segments` then holds it, if it said
        anything (with the speaker of its span, its times in the audio)."""
        parts: list[str] = []
        try:
            for index in range(len(self.queues)):
                started, begun = False, len(parts)
                while True:
                    item = await self._next(index)
                    if item.error is not None:
                        raise item.error
                    if item.end:
                        self.tokens += item.tokens
                        self._finished(index, "".join(parts[begun:]))
                        yield None, []
                        break
                    text = item.text
                    if text and not started and "".join(parts):
                        text = joiner(item.language) + text
                    if text and item.language and item.language not in self.spoken:
                        self.spoken.append(item.language)
                    started = started or bool(text)
                    parts.append(text)
                    yield text, item.logprobs
            self.text = "".join(parts)
        finally:
            await self.close()

    async def events(self) -> AsyncIterator[str]:
        """OpenAI's server-sent events: the deltas, then done (or an error event)."""
        logprobs: list[dict[str, Any]] = []
        sent = 0  # segment events sent
        try:
            async for text, entries in self.pieces():
                if text is None:
                    for number in range(sent, len(self.segments) if self.labelled else 0):
                        yield sse(diarized_segment(number, self.segments[number]).body())
                    sent = len(self.segments)
                    yield self.progress.comment()
                    continue
                logprobs += entries
                yield sse(self._delta(text, entries, len(self.segments)))
        except APIError as exc:
            yield sse(exc.body())
            return
        finally:
            await self.close()  # `texts()` closes too, but only if it is iterated to its end
        done = TranscriptionTextDoneEvent(
            text=self.text or "",
            languages=heard(self.spoken),
            usage=self.tokens.usage(),
            logprobs=[Logprob(**entry) for entry in logprobs] if self.options.logprobs else None,
        )
        yield sse(done.body())

    async def _next(self, index: int) -> _Item:
        if index == 0 and self.first is not None:
            item, self.first = self.first, None
            return item
        return await self.queues[index].get()

    def _delta(self, text: str, logprobs: list[dict[str, Any]], segment: int) -> dict[str, Any]:
        """A delta of the segment numbered `segment` (the pieces before said that many)."""
        return TranscriptionTextDeltaEvent(
            delta=text,
            logprobs=[Logprob(**entry) for entry in logprobs] if self.options.logprobs else None,
            segment_id=f"seg_{segment}" if self.labelled else None,
        ).body()

    def _finished(self, piece: int, text: str) -> None:
        """A piece is through: counted, and a segment if it said something."""
        self.progress.piece_done()
        if text.strip():
            span = self.spans[piece]
            start, end = span.seconds(RATE)
            self.segments.append(
                Segment(start, end, text.strip(), [], 0.0, [], speaker=span.speaker)
            )

    async def _piece(
        self, span: Span, queue: asyncio.Queue[_Item], slots: asyncio.Semaphore
    ) -> None:
        async with slots:
            last = await self._stream(span, queue, self.options)
            if last.outside:
                forced = self.options.forcing(self.options.candidates[0])
                again = await self._stream(span, queue, forced)
                last = replace(again, tokens=last.tokens + again.tokens)
            queue.put_nowait(last)

    async def _stream(self, span: Span, queue: asyncio.Queue[_Item], options: Options) -> _Item:
        """One piece's answer streamed into `queue`; returns its last item. When the backend
        went away it is asked again once it is back, and of its second answer only what
        follows the text already queued is queued."""
        sent = _Sent()
        attempt = functools.partial(self._attempt, span, queue, options, sent)
        try:
            return await self.upstream.persist(attempt, self.progress.at_stake)
        except APIError as exc:
            return _Item(error=exc)

    async def _attempt(
        self, span: Span, queue: asyncio.Queue[_Item], options: Options, sent: _Sent
    ) -> _Item:
        def body() -> dict[str, Any]:
            built = request_body(self.upstream, self.audio, span, options)
            return {**built, "stream_options": {"include_usage": True}}

        events = await self.upstream.chat_stream(body, self.progress.request_id)
        try:
            return await _relay(events, queue, options, sent, self.progress)
        finally:
            await events.aclose()


@dataclass
class _Sent:
    """What of one piece's answer is in its queue already, so that an answer asked again
    (the backend went away mid-stream) adds only what follows it."""

    text: str = ""
    logprobs: int = 0  # entries

    def rest(self, before: str, text: str) -> str:
        """Of `text`, which an answer says after `before`, what is not queued yet. An answer
        that says otherwise than the text queued cannot go on: the client has that text."""
        said = before + text
        common = min(len(said), len(self.text))
        if said[:common] != self.text[:common]:
            raise unavailable(
                f"{SPEECH_BACKEND} restarted during the stream and then transcribed the piece "
                "differently; retry the request."
            )
        new = said[max(len(before), len(self.text)) :]
        self.text += new
        return new

    def rest_of(self, before: int, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Of the logprob `entries` that follow `before` entries of an answer, the ones not
        queued yet."""
        new = entries[max(0, self.logprobs - before) :]
        self.logprobs += len(new)
        return new


async def _relay(
    events: EventStream,
    queue: asyncio.Queue[_Item],
    options: Options,
    sent: _Sent,
    progress: Progress,
) -> _Item:
    """Put a piece's clean deltas, past those `sent` already, into `queue` (`progress` hears
    of the first); return its last item (its end, or a language outside the client's list,
    found before any text). A failure is raised."""
    cleaner = StreamCleaner()
    kept = LogprobFilter()
    usage: dict[str, Any] | None = None
    heard, counted = "", 0  # the text and the logprob entries of this answer so far
    async for event in events:
        usage = event.get("usage") or usage
        for choice in event.get("choices") or []:
            content = (choice.get("delta") or {}).get("content")
            text = cleaner.feed(content) if isinstance(content, str) else ""
            if cleaner.decided and options.outside(cleaner.spoken_language):
                return _Item(outside=True)  # vLLM counts tokens at the end only
            logprobs = kept.feed((choice.get("logprobs") or {}).get("content") or [])
            if choice.get("finish_reason") is not None:
                text += cleaner.finish()
                logprobs += kept.finish()
            new, heard = sent.rest(heard, text), heard + text
            fresh, counted = sent.rest_of(counted, logprobs), counted + len(logprobs)
            if new or fresh:
                entries = [transcription_logprob(entry) for entry in fresh]
                language = cleaner.spoken_language or options.language
                queue.put_nowait(_Item(text=new, logprobs=entries, language=language))
                progress.heard()
    return _Item(end=True, tokens=Tokens.of(usage))
