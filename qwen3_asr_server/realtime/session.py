"""One Realtime transcription session: client events in, OpenAI's server events out.

Appended audio is resampled to 16 kHz and kept in a buffer. With server VAD on, the detector
cuts it into utterances; with it off, the client's commit does. Each committed utterance
goes into a short queue, and one worker per session transcribes them in order through the
same streamed chat path as `stream=true` uploads: deltas as vLLM writes them, then the
completed transcript. The text of the utterances before is the context of the next, after
the session's own prompt, so names and spellings carry over. The buffer never holds more
than one utterance (server VAD) or MAX_BUFFER_SECONDS (manual commits).
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pybase64

from .. import prompt
from ..audio import RATE, Audio, Resampler
from ..backend import vllm_realtime
from ..backend.vllm_realtime import LiveUtterance
from ..errors import APIError
from ..state import AppState
from ..transcription.streaming import TranscriptStream
from ..transcription.transcribe import Options, pieces
from ..transcription.usage import Tokens
from . import server_events as events
from .buffer import SAMPLE_BYTES, AudioBuffer
from .client_events import EventError, ServerVad, SessionConfig, apply_update, client_event_id
from .history import History
from .live import Live, relay
from .vad import SpeechDetector, SpeechStarted, SpeechStopped, VadEvent

logger = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Awaitable[None]]  # raises ClientGone


class ClientGone(Exception):
    """Events can no longer reach the client: it left, or stopped reading."""


MAX_BUFFER_SECONDS = 600  # manual commits: 19 MB of 16 kHz audio at most, then appends fail
MIN_COMMIT_MS = 100  # OpenAI refuses to commit less
TAIL_SECONDS = 0.15  # audio kept after the last speech window, as segmentation pads its spans
MAX_QUEUED = 8  # utterances waiting for the worker; more means the backend cannot keep up
# Silero's windows judged in the event loop (~0.15 ms each here); a longer append is judged in
# a thread, so that one client's 10 s of audio does not hold up every other session.
INLINE_WINDOWS = 8


@dataclass(frozen=True)
class _Utterance:
    item_id: str
    audio: Audio


class Session:
    """A session's state; the route feeds it events and closes it."""

    def __init__(self, state: AppState, send: Send, request_id: str, beta: bool) -> None:
        self.state = state
        self.request_id = request_id
        self.config = SessionConfig(beta=beta)
        self.id = events.new_id("sess")
        self._send = send
        self._resampler = Resampler(self.config.sample_rate)
        self._detector = self._new_detector()
        self._buffer = AudioBuffer()
        self._committed = 0  # stream position up to which audio was committed
        self._item_id: str | None = None  # the utterance being spoken (server VAD)
        self._previous_item_id: str | None = None
        settings = state.settings
        self._history = History(
            prompt.context_limit(settings.max_model_len, settings.segment_seconds)
        )
        self._queue: asyncio.Queue[_Utterance] = asyncio.Queue(MAX_QUEUED)
        self._unfinished = 0  # utterances queued or being transcribed (the queue's own count)
        self._worker: asyncio.Task[None] | None = None
        self._vllm_offered = False  # vLLM's own realtime endpoint answers (--vllm-realtime)
        self._live: Live | None = None  # the utterance being spoken into vLLM's endpoint
        self._relays: set[asyncio.Task[None]] = set()
        self._quiet = asyncio.Event()  # no utterance is being spoken
        self._quiet.set()
        self._closing = False  # settled while draining: audio is no longer listened to

    async def start(self) -> None:
        settings = self.state.settings
        if settings.vllm_realtime:
            base_url = self.state.supervisor.url
            try:
                self._vllm_offered = await vllm_realtime.offered(base_url, settings.backend_headers)
            except APIError:
                logger.warning("vLLM's realtime endpoint did not answer; using the chat path")
        await self._send(events.session_created(self.config, self.id))
        self._worker = asyncio.create_task(self._transcribe_all())

    async def close(self) -> None:
        """Stop transcribing; utterances in progress are cancelled with their upstream work."""
        tasks = [*self._relays, *([self._worker] if self._worker else [])]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def handle(self, event: dict[str, Any]) -> None:
        """One client event; a refused one is answered with an `error` event."""
        try:
            await self._dispatch(event)
        except EventError as exc:
            await self._send(events.event_error(exc, client_event_id(event)))

    async def _dispatch(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind in ("session.update", "transcription_session.update"):
            await self._update(apply_update(self.config, event))
        elif kind == "input_audio_buffer.append":
            await self._append(event.get("audio"))
        elif kind == "input_audio_buffer.commit":
            await self._commit()
        elif kind == "input_audio_buffer.clear":
            self._clear()
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
        self._check(config)
        old, self.config = self.config, config
        if config.sample_rate != old.sample_rate:
            self._resampler = Resampler(config.sample_rate)
        if config.turn_detection != old.turn_detection:
            self._clear()  # the detector's state belongs to the old settings
        await self._send(events.session_updated(config, self.id))

    def _check(self, config: SessionConfig) -> None:
        """What the client parser cannot know: the model ids served here, and how much
        context fits beside the audio."""
        path = config.transcription_path
        refusal = None if config.model is None else self.state.catalog.refusal(config.model)
        if refusal is not None:
            raise EventError(refusal.message, refusal.code or "invalid_value", f"{path}.model")
        context = prompt.context(config.prompt, config.keywords) or ""
        if len(context.encode()) > self._history.limit:
            message = prompt.context_too_long(len(context.encode()), self._history.limit)
            param = f"{path}.keywords" if config.keywords else f"{path}.prompt"
            raise EventError(message, "context_too_long", param)

    async def _append(self, data: Any) -> None:
        if not isinstance(data, str):
            raise EventError(
                "Missing required parameter: 'audio'.", "missing_required_parameter", "audio"
            )
        try:
            pcm = pybase64.b64decode(data, validate=True)
        except binascii.Error:
            raise EventError("'audio' is not valid base64.", "invalid_value", "audio") from None
        if len(pcm) % SAMPLE_BYTES:
            raise EventError(
                "'audio' must hold whole 16-bit samples (an even number of bytes).",
                "invalid_value",
                "audio",
            )
        if self.config.turn_detection is None and (
            self._buffer.held_bytes + len(pcm) * RATE // self.config.sample_rate
            > MAX_BUFFER_SECONDS * RATE * SAMPLE_BYTES
        ):
            raise EventError(
                f"The input audio buffer holds {MAX_BUFFER_SECONDS // 60} minutes at most: "
                "commit it, or turn server VAD on.",
                "input_audio_buffer_full",
                "audio",
            )
        if self._closing:
            return
        samples = self._resampler(pcm)
        self._buffer.append(samples)
        if self.config.turn_detection is not None:
            changes = await self._detect(samples)
            if self._closing:  # settled while a thread judged it: no utterance may begin
                return
            for change in changes:
                await self._on_vad(change)
            if self._live is not None:
                self._live.send_until(self._buffer, self._buffer.heard)
            self._buffer.trim(self._detector.keep_from)

    async def _detect(self, samples: npt.NDArray[np.int16]) -> list[VadEvent]:
        if self._detector.windows_in(len(samples)) > INLINE_WINDOWS:
            return await asyncio.to_thread(self._detector.feed, samples)
        return self._detector.feed(samples)

    async def _on_vad(self, change: SpeechStarted | SpeechStopped) -> None:
        if isinstance(change, SpeechStarted):
            self._quiet.clear()
            self._item_id = events.new_id("item")
            self._committed = change.audio_start
            await self._send(events.speech_started(self._item_id, _ms(change.audio_start)))
            if self._streams_live():
                self._live = Live(self._item_id, change.audio_start)
                task = asyncio.create_task(self._relay(self._live))
                self._relays.add(task)
                task.add_done_callback(self._relays.discard)
            return
        end = min(change.sample + round(TAIL_SECONDS * RATE), change.audio_end)
        item_id, self._item_id = self._item_id or events.new_id("item"), None
        await self._send(events.speech_stopped(item_id, _ms(end)))
        await self._end(item_id, end)

    def _streams_live(self) -> bool:
        """vLLM's realtime endpoint serves this utterance: it takes no language or context."""
        config = self.config
        asked = config.language or config.languages or config.prompt or config.keywords
        return self._vllm_offered and not (asked or config.logprobs)

    async def _end(self, item_id: str, end: int) -> None:
        """The utterance that began at `_committed` ends at `end`: commit and transcribe it."""
        live, self._live = self._live, None
        try:
            if live is None:
                await self._enqueue(item_id, self._committed, end)
                return
            live.send_until(self._buffer, end)
            live.chunks.put_nowait(None)
            self._committed = end
            self._buffer.trim(end)
            await self._announce(item_id)
        finally:
            self._quiet.set()  # queued or relayed: `settled` now waits on the transcription

    async def _commit(self) -> None:
        """The client's commit: everything not committed yet becomes an utterance."""
        start = self._committed
        if self._buffer.heard - start < MIN_COMMIT_MS * RATE // 1000:
            heard = _ms(self._buffer.heard - start)
            raise EventError(
                f"Error committing input audio buffer: buffer too small. Expected at least "
                f"{MIN_COMMIT_MS}ms of audio, but buffer only has {heard:.2f}ms of audio.",
                "input_audio_buffer_commit_empty",
            )
        item_id = self._item_id or events.new_id("item")
        if self._item_id is not None:  # speech in progress: it ends here
            await self._send(events.speech_stopped(item_id, _ms(self._buffer.heard)))
            self._item_id = None
        self._detector = self._new_detector(start=self._buffer.heard)
        await self._end(item_id, self._buffer.heard)

    async def _enqueue(self, item_id: str, start: int, end: int) -> None:
        samples = self._buffer.samples(start, end)
        self._committed = end
        self._buffer.trim(end)
        await self._announce(item_id)
        try:
            self._queue.put_nowait(_Utterance(item_id, Audio(samples)))
            self._unfinished += 1
        except asyncio.QueueFull:
            await self._send(
                events.transcription_failed(
                    item_id,
                    f"{MAX_QUEUED} utterances are already waiting for the speech model; "
                    "this one was dropped.",
                    "rate_limit_exceeded",
                )
            )

    async def _announce(self, item_id: str) -> None:
        """The events of a commit: the buffer became this item."""
        await self._send(events.buffer_committed(item_id, self._previous_item_id))
        for event in events.item_events(self.config, item_id, self._previous_item_id):
            await self._send(event)
        self._previous_item_id = item_id

    def _clear(self) -> None:
        """Forget the audio not committed yet, and any speech in progress."""
        if self._live is not None:
            self._live.cancelled = True
            self._live.chunks.put_nowait(None)
            self._live = None
        self._buffer.trim(self._buffer.heard)
        self._committed = self._buffer.heard
        self._item_id = None
        self._quiet.set()
        self._detector = self._new_detector(start=self._buffer.heard)

    def _new_detector(self, start: int = 0) -> SpeechDetector:
        """A detector for the stream from position `start` on (after a commit or a clear)."""
        vad = self.config.turn_detection or ServerVad()
        return SpeechDetector(
            self.state.speech_model(),
            threshold=vad.threshold,
            silence_ms=vad.silence_duration_ms,
            prefix_ms=vad.prefix_padding_ms,
            max_speech_ms=round(self.state.settings.segment_seconds * 1000),
            start=start,
        )

    async def _transcribe_all(self) -> None:
        with contextlib.suppress(ClientGone):  # the route sees it too, and ends the session
            while True:
                utterance = await self._queue.get()
                try:
                    await self._transcribe(utterance)
                finally:
                    self._queue.task_done()
                    self._unfinished -= 1

    async def settled(self) -> None:
        """Once no utterance is being spoken or transcribed: when a draining server may close
        the session and lose nothing the client sent as speech (with manual commits, audio
        not committed yet is not an utterance). From then on appended audio is dropped, so
        that no utterance begins that the closing session could not finish."""
        while not (self._quiet.is_set() and not self._unfinished and not self._relays):
            await self._quiet.wait()
            await self._queue.join()
            if self._relays:
                await asyncio.wait(set(self._relays))
        self._closing = True

    async def _transcribe(self, utterance: _Utterance) -> None:
        options = Options.from_settings(
            self.state.settings,
            language=self.config.forced,
            context=self._history.context(self.config),
            logprobs=self.config.logprobs,
            candidates=self.config.candidates,
        )
        audio = utterance.audio
        spans = await pieces(audio, options, self.state.speech_model, self.state.decoding)
        stream = TranscriptStream(self.state.upstream, audio, spans, options, self.request_id)
        item_id = utterance.item_id
        logprobs: list[dict[str, Any]] = []
        try:
            await stream.start()
            async for text, entries in stream.texts():
                logprobs += entries
                if text:
                    kept = entries if self.config.logprobs else None
                    await self._send(events.transcription_delta(item_id, text, logprobs=kept))
        except APIError as exc:
            await self._send(events.transcription_failed(item_id, exc.message, exc.code))
            return
        finally:
            await stream.close()
        kept_all = logprobs if self.config.logprobs else None
        await self._completed(
            item_id,
            stream.text or "",
            utterance.audio.duration,
            stream.tokens,
            kept_all,
            stream.spoken,
        )

    async def _relay(self, live: Live) -> None:
        """One utterance through vLLM's realtime endpoint, its audio sent as it comes."""
        with contextlib.suppress(ClientGone):  # the route sees it too, and ends the session
            await self._relay_live(live)

    async def _relay_live(self, live: Live) -> None:
        settings = self.state.settings
        utterance = LiveUtterance(
            self.state.supervisor.url, self.state.upstream.model, settings.backend_headers
        )

        async def delta(text: str) -> None:
            await self._send(events.transcription_delta(live.item_id, text))

        try:
            transcript = await relay(live, utterance, delta)
        except APIError as exc:
            await self._send(events.transcription_failed(live.item_id, exc.message, exc.code))
            return
        if transcript is not None:
            tokens = Tokens.of(utterance.usage)
            await self._completed(
                live.item_id, transcript, live.seconds, tokens, None, utterance.spoken
            )

    async def _completed(
        self,
        item_id: str,
        transcript: str,
        seconds: float,
        tokens: Tokens,
        logprobs: list[dict[str, Any]] | None,
        spoken: list[str],
    ) -> None:
        await self._send(
            events.transcription_completed(
                item_id, transcript, tokens.body(), logprobs=logprobs, spoken=spoken
            )
        )
        self._history.remember(transcript)
        self.state.metrics.transcribed(seconds, tokens)


def _ms(samples: int) -> int:
    return samples * 1000 // RATE
