"""A Realtime session's transcription worker: committed utterances, one at a time, in order.

Each goes through the transcription core's one entry for a live door's utterance
(`transcription.utterance`), streamed as `stream=true` uploads are: deltas as vLLM writes
them, then the completed transcript, counted and logged as every transcription is. The text
of the utterances before is the context of the next, after the session's own prompt
(`history`), so names and spellings carry over. At most MAX_QUEUED wait: more means the
backend cannot keep up, and the utterance is answered with a failed event instead. An
utterance may come with its transcription already under way, started at the pause its turn
ended at (`speculation`): it is kept if it made the request this worker would make now.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import APIError
from ...model.languages import Language
from ...speakers.diarize import Voices
from ...speech.audio import Audio
from ...transcription.pieces import Cuts
from ...transcription.streaming import TranscriptStream
from ...transcription.usage import Tokens
from ...transcription.utterance import transcribing, utterance
from . import server_events as events
from .history import History
from .protocol import SessionConfig
from .server_events import ClientGone, Send
from .services import RealtimeServices
from .speculation import Basis, Speculation

MAX_QUEUED = 8  # utterances waiting for the worker


@dataclass(frozen=True)
class Utterance:
    item_id: str
    audio: Audio
    speculation: Speculation | None = None  # its transcription, started at the pause it ended


class Transcriber:
    def __init__(
        self,
        services: RealtimeServices,
        send: Send,
        request_id: str,
        config: Callable[[], SessionConfig],
    ) -> None:
        self.services = services
        self.request_id = request_id
        self.history = History(services.policy.context_limit)
        self.unfinished = 0  # utterances queued or being transcribed (the queue's own count)
        self._send = send
        self._config = config  # the session's, as it is when an utterance's turn comes
        self._queue: asyncio.Queue[Utterance] = asyncio.Queue(MAX_QUEUED)
        self._task: asyncio.Task[None] | None = None
        self._voices = Voices()  # the speakers heard, when the session labels them
        self._speculating: set[asyncio.Task[str | None]] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def close(self) -> None:
        """Stop: the utterance being transcribed is cancelled with its upstream requests, and
        so is a speculation."""
        tasks = [task for task in (self._task, *self._speculating) if task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def speculate(self, item_id: str, spoken: Audio, start: int, end: int) -> Speculation | None:
        """Start transcribing an utterance not yet committed (see `speculation`); None when
        the worker is busy, so that the context may still change, or the session diarizes."""
        config = self._config()
        if self.unfinished or config.diarize:
            return None
        basis = Basis(config, self.history.context(config))
        speculation = Speculation(item_id, start, end, basis, self._send)
        task = asyncio.create_task(self._speculation(speculation, spoken))
        speculation.task = task
        self._speculating.add(task)
        task.add_done_callback(self._speculating.discard)
        self.services.metrics.realtime_speculations.labels(outcome="started").inc()
        return speculation

    def drop(self, speculation: Speculation) -> None:
        """The turn did not end where the speculation cut it: cancel it."""
        speculation.drop()
        self.services.metrics.realtime_speculations.labels(outcome="dropped").inc()

    async def join(self) -> None:
        """Until every utterance queued so far is transcribed."""
        await self._queue.join()

    async def enqueue(self, utterance: Utterance) -> None:
        try:
            self._queue.put_nowait(utterance)
            self.unfinished += 1
        except asyncio.QueueFull:
            busy = APIError(
                429,
                f"{MAX_QUEUED} utterances are already waiting for the speech model; this one "
                "was dropped.",
                code="rate_limit_exceeded",
            )
            if utterance.speculation is not None:
                self.drop(utterance.speculation)
            await self._send(events.transcription_failed(utterance.item_id, busy))

    async def completed(
        self,
        item_id: str,
        transcript: str,
        tokens: Tokens,
        logprobs: list[dict[str, Any]] | None,
        spoken: list[Language],
    ) -> None:
        """An item's whole transcript: to the client, and to the history."""
        await self._send(
            events.transcription_completed(
                item_id, transcript, tokens.body(), logprobs=logprobs, spoken=spoken
            )
        )
        self.history.remember(transcript)

    def _cuts(self, config: SessionConfig) -> Cuts | None:
        """Where a diarizing session's utterance changes speaker, as the session knows them."""
        diarizer, voices = self.services.diarizer, self._voices
        if not config.diarize or diarizer is None:
            return None
        voices.most = config.max_speakers
        return lambda audio, speech: diarizer.utterance(audio.samples, speech, voices)

    async def _run(self) -> None:
        with contextlib.suppress(ClientGone):  # the route sees it too, and ends the session
            while True:
                spoken = await self._queue.get()
                try:
                    await self._transcribe(spoken)
                finally:
                    self._queue.task_done()
                    self.unfinished -= 1

    async def _transcribe(self, spoken: Utterance) -> None:
        """The utterance's deltas, then its completed transcript (or a failed event): its
        speculation's, if that made the request this would make now."""
        config = self._config()
        basis = Basis(config, self.history.context(config))
        speculation = spoken.speculation
        if speculation is not None and speculation.basis == basis:
            self.services.metrics.realtime_speculations.labels(outcome="kept").inc()
            text = await speculation.keep()
        else:
            if speculation is not None:
                self.drop(speculation)
            text = await self._transcription(spoken.item_id, spoken.audio, basis, self._send)
        if text is not None:
            self.history.remember(text)

    async def _speculation(self, speculation: Speculation, spoken: Audio) -> str | None:
        item_id, basis = speculation.item_id, speculation.basis
        return await self._transcription(item_id, spoken, basis, speculation.send, speculation.kept)

    async def _transcription(
        self,
        item_id: str,
        spoken: Audio,
        basis: Basis,
        send: Send,
        kept: asyncio.Event | None = None,
    ) -> str | None:
        """Transcribe, the events to `send`; the transcript, or None if it failed. With
        `kept`, the transcript is finished (sent, and counted) only once that is set."""
        config = basis.config
        request = utterance(
            spoken,
            language=config.forced,
            context=basis.context,
            logprobs=config.logprobs,
            candidates=config.candidates,
        )
        service, cuts = self.services.transcription, self._cuts(config)
        try:
            async with transcribing(service, request, "realtime", self.request_id, cuts) as stream:
                logprobs = await self._deltas(item_id, stream, config, send)
                if kept is not None:  # a speculation, transcribed at a pause
                    service.tracing.event("speculation: held until the turn ends there")
                    await kept.wait()
                    service.tracing.event("speculation kept")
                text = stream.text or ""
                await send(
                    events.transcription_completed(
                        item_id,
                        text,
                        stream.tokens.body(),
                        logprobs=logprobs if config.logprobs else None,
                        spoken=stream.spoken,
                    )
                )
                return text
        except APIError as exc:
            await send(events.transcription_failed(item_id, exc))
            return None

    async def _deltas(
        self, item_id: str, stream: TranscriptStream, config: SessionConfig, send: Send
    ) -> list[dict[str, Any]]:
        """Send the stream's text as it comes (and a diarizing session's segments as each
        piece ends); the logprobs of the whole text."""
        logprobs: list[dict[str, Any]] = []
        said = 0  # segments sent
        async for text, entries in stream.pieces():
            if text is None:
                for segment in stream.segments[said:] if config.diarize else ():
                    await send(events.transcription_segment(item_id, said, segment))
                    said += 1
                continue
            logprobs += entries
            if text:
                kept = entries if config.logprobs else None
                await send(events.transcription_delta(item_id, text, logprobs=kept))
        return logprobs
