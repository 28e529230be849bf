"""Utterances streamed into vLLM's own /v1/realtime while they are spoken (`--vllm-realtime`).

The session's turns hand each utterance's audio over as the VAD lets it go
(`Live.send_until`); its relay feeds it to vLLM as it comes and passes every text on as vLLM
answers, so a long utterance's words arrive before the speaker stops. vLLM's endpoint takes
no language, prompt or context: a session that sets one, or asks for logprobs, is
transcribed by the worker instead. Its transcripts do not pass the service's stream, but
they finish as every utterance does (`TranscriptionService.finished`): counted under
`realtime` once the client has them, and logged with --log-transcripts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...backend import vllm_realtime
from ...backend.activity import awake
from ...backend.vllm_realtime import LiveUtterance
from ...errors import APIError
from ...speech.audio import RATE
from ...transcription.usage import Tokens
from . import server_events as events
from .buffer import AudioBuffer
from .protocol import SessionConfig
from .server_events import ClientGone, Send
from .services import RealtimeServices
from .transcriber import Transcriber

logger = logging.getLogger(__name__)


@dataclass
class Live:
    """An utterance streaming into vLLM's realtime endpoint while it is spoken."""

    item_id: str
    sent: int  # stream position up to which its audio was handed to the relay
    chunks: asyncio.Queue[npt.NDArray[np.int16] | None] = field(default_factory=asyncio.Queue)
    cancelled: bool = False  # the client cleared the buffer: no transcript is wanted
    seconds: float = 0.0

    def send_until(self, buffer: AudioBuffer, end: int) -> None:
        """Hand the relay the audio from where it got to up to stream position `end`."""
        if end > self.sent:
            self.chunks.put_nowait(buffer.samples(self.sent, end))
            self.seconds += (end - self.sent) / RATE
            self.sent = end

    def end(self, cancelled: bool = False) -> None:
        """No more audio: the utterance is over (or, `cancelled`, wanted no more)."""
        self.cancelled = cancelled
        self.chunks.put_nowait(None)


async def relay(
    live: Live, utterance: LiveUtterance, on_text: Callable[[str], Awaitable[None]]
) -> str | None:
    """Stream `live`'s audio into `utterance` until its end, each text to `on_text` as vLLM
    answers; the whole transcript, or None when the client cleared the utterance. vLLM's
    failures are APIErrors; the utterance's connection is closed however it ends."""
    parts: list[str] = []

    async def relay_texts() -> None:
        async for text in utterance.texts():
            parts.append(text)
            await on_text(text)

    reader: asyncio.Task[None] | None = None
    try:
        await utterance.open()
        reader = asyncio.create_task(relay_texts())
        while (chunk := await live.chunks.get()) is not None:
            await utterance.append(chunk)
        if live.cancelled:
            return None
        await utterance.finish()
        await reader
    finally:
        if reader is not None and not reader.done():
            reader.cancel()
            await asyncio.wait([reader])
        await utterance.close()
    return "".join(parts)


class Relays:
    """A session's live utterances: at most one being spoken, earlier ones still answering."""

    def __init__(self, services: RealtimeServices, send: Send, transcriber: Transcriber) -> None:
        self.services = services
        self.tasks: set[asyncio.Task[None]] = set()
        self._offered = False  # vLLM's own realtime endpoint answers
        self._send = send
        self._transcriber = transcriber  # whose history a live transcript joins

    async def start(self) -> None:
        settings = self.services.settings
        if settings.vllm_realtime:
            base_url = self.services.supervisor.url
            try:  # its engine woken first: this session keeps it awake from then on
                activity = self.services.supervisor.activity
                tracing = self.services.transcription.tracing  # the event on the session's span
                await awake(activity, settings.wake_timeout, "vLLM", tracing=tracing)
                self._offered = await vllm_realtime.offered(base_url, settings.backend_headers)
            except APIError:
                logger.warning("vLLM's realtime endpoint did not answer; using the chat path")

    def begin(self, config: SessionConfig, item_id: str, start: int) -> Live | None:
        """A relay for the utterance starting at stream position `start`, if vLLM's endpoint
        serves this session: it takes no language or context, and labels no speakers."""
        asked = config.language or config.languages or config.prompt or config.keywords
        if not self._offered or asked or config.logprobs or config.diarize:
            return None
        live = Live(item_id, start)
        task = asyncio.create_task(self._relay(live))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return live

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            await asyncio.wait(set(self.tasks))

    async def _relay(self, live: Live) -> None:
        with contextlib.suppress(ClientGone):  # the route sees it too, and ends the session
            settings = self.services.settings
            utterance = LiveUtterance(
                self.services.supervisor.url, self.services.upstream.model, settings.backend_headers
            )

            async def delta(text: str) -> None:
                await self._send(events.transcription_delta(live.item_id, text))

            try:
                transcript = await relay(live, utterance, delta)
            except APIError as exc:
                await self._send(events.transcription_failed(live.item_id, exc))
                return
            if transcript is not None:
                tokens = Tokens.of(utterance.usage)
                spoken = utterance.spoken
                await self._transcriber.completed(live.item_id, transcript, tokens, None, spoken)
                request_id = self._transcriber.request_id
                service = self.services.transcription
                service.finished(live.seconds, tokens, "realtime", transcript, request_id)
