"""A Realtime session's transcription worker: committed utterances, one at a time, in order.

Each goes through the transcription service's stream, as `stream=true` uploads do: deltas as
vLLM writes them, then the completed transcript. The text of the utterances before is the
context of the next, after the session's own prompt (`history`), so names and spellings
carry over. At most MAX_QUEUED wait: more means the backend cannot keep up, and the
utterance is answered with a failed event instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import APIError
from ..model.languages import Language
from ..protocol.realtime import SessionConfig
from ..speakers.diarize import Voices
from ..speech.audio import Audio
from ..state import AppState
from ..transcription.pieces import Cuts
from ..transcription.usage import Tokens
from . import server_events as events
from .history import History
from .server_events import ClientGone, Send

MAX_QUEUED = 8  # utterances waiting for the worker


@dataclass(frozen=True)
class Utterance:
    item_id: str
    audio: Audio


class Transcriber:
    def __init__(
        self, state: AppState, send: Send, request_id: str, config: Callable[[], SessionConfig]
    ) -> None:
        self.state = state
        self.request_id = request_id
        self.history = History(state.policy.context_limit)
        self.unfinished = 0  # utterances queued or being transcribed (the queue's own count)
        self._send = send
        self._config = config  # the session's, as it is when an utterance's turn comes
        self._queue: asyncio.Queue[Utterance] = asyncio.Queue(MAX_QUEUED)
        self._task: asyncio.Task[None] | None = None
        self._voices = Voices()  # the speakers heard, when the session labels them

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def close(self) -> None:
        """Stop: the utterance being transcribed is cancelled with its upstream requests."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])

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
            await self._send(events.transcription_failed(utterance.item_id, busy))

    async def completed(
        self,
        item_id: str,
        transcript: str,
        seconds: float,
        tokens: Tokens,
        logprobs: list[dict[str, Any]] | None,
        spoken: list[Language],
    ) -> None:
        """An item's whole transcript: to the client, to the history, to the metrics."""
        await self._send(
            events.transcription_completed(
                item_id, transcript, tokens.body(), logprobs=logprobs, spoken=spoken
            )
        )
        self.history.remember(transcript)
        self.state.transcription.finished(seconds, tokens, "realtime")

    def _cuts(self, config: SessionConfig) -> Cuts | None:
        """Where a diarizing session's utterance changes speaker, as the session knows them."""
        diarizer, voices = self.state.diarizer, self._voices
        if not config.diarize or diarizer is None:
            return None
        return lambda audio, speech: diarizer.utterance(audio.samples, speech, voices)

    async def _run(self) -> None:
        with contextlib.suppress(ClientGone):  # the route sees it too, and ends the session
            while True:
                utterance = await self._queue.get()
                try:
                    await self._transcribe(utterance)
                finally:
                    self._queue.task_done()
                    self.unfinished -= 1

    async def _transcribe(self, utterance: Utterance) -> None:
        config = self._config()
        service = self.state.transcription
        options = service.options(
            language=config.forced,
            context=self.history.context(config),
            logprobs=config.logprobs,
            candidates=config.candidates,
            cuts=self._cuts(config),
        )
        stream = await service.utterance(utterance.audio, options, self.request_id)
        item_id = utterance.item_id
        logprobs: list[dict[str, Any]] = []
        said = 0  # segments sent
        try:
            await stream.start()
            async for text, entries in stream.pieces():
                if text is None:
                    for segment in stream.segments[said:] if config.diarize else ():
                        await self._send(events.transcription_segment(item_id, said, segment))
                        said += 1
                    continue
                logprobs += entries
                if text:
                    kept = entries if config.logprobs else None
                    await self._send(events.transcription_delta(item_id, text, logprobs=kept))
        except APIError as exc:
            await self._send(events.transcription_failed(item_id, exc))
            return
        finally:
            await stream.close()
        duration = utterance.audio.duration
        kept_all = logprobs if config.logprobs else None
        await self.completed(
            item_id, stream.text or "", duration, stream.tokens, kept_all, stream.spoken
        )
