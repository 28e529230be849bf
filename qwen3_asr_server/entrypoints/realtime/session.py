"""One Realtime transcription session: client events in, OpenAI's server events out.

The session dispatches each client event to the part whose job it is: its configuration
(`entrypoints.realtime.protocol`), the input audio buffer and its turns (`turns`), the transcription
worker that transcribes committed utterances in order (`transcriber`), and the relay of utterances
into vLLM's own realtime endpoint while they are spoken (`live`, with `--vllm-realtime`).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import EventError
from . import protocol as realtime
from . import server_events as events
from .client_events import client_event_id, parse_client_event
from .live import Live, Relays
from .protocol import SessionConfig
from .server_events import Send
from .services import RealtimeServices
from .transcriber import Transcriber
from .turns import COMPLETE, TurnJudge, Turns


class Session:
    """A session's parts, wired; the route feeds it events and closes it."""

    def __init__(
        self,
        services: RealtimeServices,
        send: Send,
        request_id: str,
        beta: bool,
        # what an ephemeral key was minted for, or a WebRTC call's, given with its offer
        config: SessionConfig | None = None,
        track: bool = False,  # a WebRTC call: its audio comes by its track, never appended
    ) -> None:
        self.services = services
        self.request_id = request_id
        self.config = replace(config or SessionConfig(), beta=beta)
        self.track = track
        self.id = events.new_id("sess")
        self._send = send
        self._worker = Transcriber(services, send, request_id, lambda: self.config)
        self._relays = Relays(services, send, self._worker)
        self._turns = Turns(
            send,
            services.speech_model,
            round(services.settings.segment_seconds * 1000),
            started=self._speech_started,
            ended=self._worker.enqueue,
            speculator=self._worker,
            judge=_judge(services),
        )
        self._turns.configure(self.config)

    async def start(self) -> None:
        await self._relays.start()
        await self._send(events.session_created(self.config, self.id))
        self._worker.start()

    async def close(self) -> None:
        """Stop transcribing; utterances in progress are cancelled with their upstream work."""
        await self._relays.close()
        await self._worker.close()

    async def settled(self) -> None:
        """Once no utterance is being spoken or transcribed: when a draining server may close
        the session and lose nothing the client sent as speech (with manual commits, audio
        not committed yet is not an utterance). From then on appended audio is dropped, so
        that no utterance begins that the closing session could not finish."""
        turns, worker, relays = self._turns, self._worker, self._relays
        while not (turns.quiet.is_set() and not worker.unfinished and not relays.tasks):
            await turns.quiet.wait()
            await worker.join()
            if relays.tasks:
                await asyncio.wait(set(relays.tasks))
        turns.closing = True

    async def drained(self) -> None:
        """Returns once the server drains and the session has `settled`: time to close."""
        await self.services.drain.started.wait()
        await self.settled()

    async def receive(self, message: str | bytes, max_bytes: int) -> None:
        """One message from the client (a WebSocket frame, a data channel message)."""
        try:
            event = parse_client_event(message, max_bytes)
        except EventError as exc:
            await self._send(events.error(exc))
            return
        await self.handle(event)

    async def handle(self, event: dict[str, Any]) -> None:
        """One client event; a refused one is answered with an `error` event."""
        try:
            await self._dispatch(event)
        except EventError as exc:
            await self._send(events.error(exc, client_event_id(event)))

    async def hear(self, samples: npt.NDArray[np.int16]) -> None:
        """A WebRTC call's audio, 16 kHz: its track is its input_audio_buffer.append."""
        await self._turns.hear(samples)

    async def _dispatch(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind in ("session.update", "transcription_session.update"):
            await self._update(realtime.apply_update(self.config, event))
        elif kind == "input_audio_buffer.append" and self.track:
            raise EventError(
                "A WebRTC call's audio is its audio track: input_audio_buffer.append is for "
                "WebSocket sessions.",
                "invalid_event",
                "type",
            )
        elif kind == "input_audio_buffer.append":
            await self._turns.append(realtime.appended_audio(event))
        elif kind == "input_audio_buffer.commit":
            await self._turns.commit()
        elif kind == "input_audio_buffer.clear":
            self._turns.clear()
            await self._send(events.buffer_cleared())
        else:
            raise EventError(
                f"Unknown event type {kind!r}. A transcription session takes session.update "
                "(or transcription_session.update) and input_audio_buffer.append, .commit and "
                ".clear.",
                "invalid_event",
                "type",
            )

    async def _update(self, config: SessionConfig) -> None:
        realtime.check(config, self.services.policy)
        self.config = config
        self._turns.configure(config)
        await self._send(events.session_updated(config, self.id))

    def _speech_started(self, item_id: str, start: int) -> Live | None:
        return self._relays.begin(self.config, item_id, start)


def _judge(services: RealtimeServices) -> TurnJudge | None:
    """The server's end-of-turn model (`--smart-turn`), its verdicts counted; None without."""
    model = services.turn_end
    if model is None:
        return None
    judgements = services.metrics.turn_judgements

    def judge(samples: npt.NDArray[np.int16]) -> float:
        probability = model(samples)
        judgements.labels(verdict="complete" if probability >= COMPLETE else "incomplete").inc()
        return probability

    return judge
