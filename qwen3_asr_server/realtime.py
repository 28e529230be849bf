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
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import realtime_events as events
from .audio import RATE, Audio, Resampler
from .errors import APIError
from .realtime_config import EventError, SessionConfig, apply_update, client_event_id
from .state import AppState
from .streaming import TranscriptStream
from .transcribe import Options
from .vad import SpeechDetector, SpeechStarted, SpeechStopped

logger = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_BUFFER_SECONDS = 600  # manual commits: 19 MB of 16 kHz audio at most, then appends fail
MIN_COMMIT_MS = 100  # OpenAI refuses to commit less
TAIL_SECONDS = 0.15  # audio kept after the last loud frame, as segmentation pads its spans
MAX_QUEUED = 8  # utterances waiting for the worker; more means the backend cannot keep up
MAX_CONTEXT_CHARS = 1000  # of earlier transcripts, as context for the next utterance
_SAMPLE = 2  # bytes per 16-bit sample


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
        self._buffer = bytearray()  # 16 kHz samples from `_base` on
        self._base = 0  # stream position (in samples) of the buffer's first sample
        self._heard = 0  # samples received in the whole session
        self._committed = 0  # stream position up to which audio was committed
        self._item_id: str | None = None  # the utterance being spoken (server VAD)
        self._previous_item_id: str | None = None
        self._history: list[str] = []
        self._queue: asyncio.Queue[_Utterance] = asyncio.Queue(MAX_QUEUED)
        self._worker: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._send(events.session_created(self.config, self.id))
        self._worker = asyncio.create_task(self._transcribe_all())

    async def close(self) -> None:
        """Stop transcribing; an utterance in progress is cancelled with its upstream request."""
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.wait([self._worker])

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
        old, self.config = self.config, config
        if config.sample_rate != old.sample_rate:
            self._resampler = Resampler(config.sample_rate)
        if config.turn_detection != old.turn_detection:
            self._clear()  # the detector's state belongs to the old settings
        await self._send(events.session_updated(config, self.id))

    async def _append(self, data: Any) -> None:
        if not isinstance(data, str):
            raise EventError(
                "Missing required parameter: 'audio'.", "missing_required_parameter", "audio"
            )
        try:
            pcm = binascii.a2b_base64(data, strict_mode=True)
        except binascii.Error:
            raise EventError("'audio' is not valid base64.", "invalid_value", "audio") from None
        if len(pcm) % _SAMPLE:
            raise EventError(
                "'audio' must hold whole 16-bit samples (an even number of bytes).",
                "invalid_value",
                "audio",
            )
        if self.config.turn_detection is None and (
            len(self._buffer) + len(pcm) * RATE // self.config.sample_rate
            > MAX_BUFFER_SECONDS * RATE * _SAMPLE
        ):
            raise EventError(
                f"The input audio buffer holds {MAX_BUFFER_SECONDS // 60} minutes at most: "
                "commit it, or turn server VAD on.",
                "input_audio_buffer_full",
                "audio",
            )
        samples = self._resampler(pcm)
        self._buffer += samples.tobytes()
        self._heard += len(samples)
        if self.config.turn_detection is not None:
            for change in self._detector.feed(samples):
                await self._on_vad(change)
            self._trim(self._detector.keep_from)

    async def _on_vad(self, change: SpeechStarted | SpeechStopped) -> None:
        if isinstance(change, SpeechStarted):
            self._item_id = events.new_id("item")
            self._committed = change.audio_start
            await self._send(events.speech_started(self._item_id, _ms(change.audio_start)))
            return
        end = min(change.sample + round(TAIL_SECONDS * RATE), change.audio_end)
        item_id, self._item_id = self._item_id or events.new_id("item"), None
        await self._send(events.speech_stopped(item_id, _ms(end)))
        await self._enqueue(item_id, self._committed, end)

    async def _commit(self) -> None:
        """The client's commit: everything not committed yet becomes an utterance."""
        start = self._committed
        if self._heard - start < MIN_COMMIT_MS * RATE // 1000:
            heard = _ms(self._heard - start)
            raise EventError(
                f"Error committing input audio buffer: buffer too small. Expected at least "
                f"{MIN_COMMIT_MS}ms of audio, but buffer only has {heard:.2f}ms of audio.",
                "input_audio_buffer_commit_empty",
            )
        item_id = self._item_id or events.new_id("item")
        if self._item_id is not None:  # speech in progress: it ends here
            await self._send(events.speech_stopped(item_id, _ms(self._heard)))
            self._item_id = None
        self._detector = self._new_detector(offset=self._heard)
        await self._enqueue(item_id, start, self._heard)

    async def _enqueue(self, item_id: str, start: int, end: int) -> None:
        begin = max(start, self._base) - self._base
        samples = np.frombuffer(
            bytes(self._buffer[begin * _SAMPLE : (end - self._base) * _SAMPLE]), dtype=np.int16
        )
        self._committed = end
        self._trim(end)
        await self._send(events.buffer_committed(item_id, self._previous_item_id))
        for event in events.item_events(self.config, item_id, self._previous_item_id):
            await self._send(event)
        self._previous_item_id = item_id
        try:
            self._queue.put_nowait(_Utterance(item_id, Audio(samples)))
        except asyncio.QueueFull:
            await self._send(
                events.transcription_failed(
                    item_id,
                    f"{MAX_QUEUED} utterances are already waiting for the speech model; "
                    "this one was dropped.",
                    "rate_limit_exceeded",
                )
            )

    def _clear(self) -> None:
        """Forget the audio not committed yet, and any speech in progress."""
        self._trim(self._heard)
        self._committed = self._heard
        self._item_id = None
        self._detector = self._new_detector(offset=self._heard)

    def _trim(self, keep_from: int) -> None:
        """Drop buffered audio before stream position `keep_from`."""
        drop = min(keep_from, self._heard) - self._base
        if drop > 0:
            del self._buffer[: drop * _SAMPLE]
            self._base += drop

    def _new_detector(self, offset: int = 0) -> OffsetDetector:
        vad = self.config.turn_detection
        if vad is None:
            return OffsetDetector(SpeechDetector(), offset)
        detector = SpeechDetector(
            threshold=vad.threshold,
            silence_ms=vad.silence_duration_ms,
            prefix_ms=vad.prefix_padding_ms,
            max_speech_ms=round(self.state.settings.segment_seconds * 1000),
        )
        return OffsetDetector(detector, offset)

    async def _transcribe_all(self) -> None:
        while True:
            utterance = await self._queue.get()
            await self._transcribe(utterance)

    async def _transcribe(self, utterance: _Utterance) -> None:
        settings = self.state.settings
        options = Options(
            language=self.config.language,
            context=self._context(),
            temperature=0.0,
            timed=False,
            logprobs=self.config.logprobs,
            window=settings.segment_seconds,
            concurrency=settings.segment_concurrency,
        )
        stream = TranscriptStream(self.state.upstream, utterance.audio, options, self.request_id)
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
        transcript = stream.text or ""
        usage = events.token_usage(stream.prompt_tokens, stream.completion_tokens)
        kept_all = logprobs if self.config.logprobs else None
        await self._send(
            events.transcription_completed(item_id, transcript, usage, logprobs=kept_all)
        )
        self._remember(transcript)
        metrics = self.state.metrics
        metrics.audio_seconds.inc(utterance.audio.duration)
        metrics.tokens.labels(kind="prompt").inc(stream.prompt_tokens)
        metrics.tokens.labels(kind="completion").inc(stream.completion_tokens)

    def _context(self) -> str | None:
        earlier = " ".join(self._history)[-MAX_CONTEXT_CHARS:]
        parts = [part for part in (self.config.prompt, earlier) if part]
        return "\n".join(parts) or None

    def _remember(self, transcript: str) -> None:
        if transcript:
            self._history.append(transcript)
            while len(self._history) > 1 and sum(map(len, self._history)) > MAX_CONTEXT_CHARS:
                self._history.pop(0)


class OffsetDetector:
    """A SpeechDetector that starts at stream position `offset` (after a commit or clear),
    and reports positions in the stream's terms."""

    def __init__(self, detector: SpeechDetector, offset: int) -> None:
        self._detector = detector
        self._offset = offset

    @property
    def keep_from(self) -> int:
        return self._detector.keep_from + self._offset

    def feed(self, samples: np.ndarray) -> list[SpeechStarted | SpeechStopped]:
        return [_shift(change, self._offset) for change in self._detector.feed(samples)]


def _shift(change: SpeechStarted | SpeechStopped, offset: int) -> SpeechStarted | SpeechStopped:
    if isinstance(change, SpeechStarted):
        return replace(
            change, sample=change.sample + offset, audio_start=change.audio_start + offset
        )
    return replace(change, sample=change.sample + offset, audio_end=change.audio_end + offset)


def _ms(samples: int) -> int:
    return samples * 1000 // RATE
