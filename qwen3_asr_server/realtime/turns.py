"""A Realtime session's input audio buffer and its turns.

Appended audio is resampled to 16 kHz and kept in the buffer. With server VAD on, the
detector cuts it into utterances; with it off, the client's commit does. An utterance that
ends is committed (its events sent) and handed on: its samples to the transcription worker,
or, while it is spoken into vLLM's own endpoint, the rest of its audio to that relay. The
buffer never holds more than one utterance (server VAD) or MAX_BUFFER_SECONDS (manual
commits).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import numpy as np
import numpy.typing as npt

from ..errors import EventError
from ..protocol.realtime import ServerVad, SessionConfig
from ..speech.audio import RATE, Audio, Resampler
from ..speech.silero import SpeechModel
from ..speech.vad import SpeechDetector, SpeechStarted, SpeechStopped
from . import server_events as events
from .buffer import SAMPLE_BYTES, AudioBuffer
from .live import Live
from .server_events import Send
from .worker import Utterance

MAX_BUFFER_SECONDS = 600  # manual commits: 19 MB of 16 kHz audio at most, then appends fail
MIN_COMMIT_MS = 100  # OpenAI refuses to commit less
TAIL_SECONDS = 0.15  # audio kept after the last speech window, as segmentation pads its spans


class Turns:
    """`started` is asked, when speech starts, for a live relay of it (None: there is none);
    `ended` gets every utterance that is not relayed live."""

    def __init__(
        self,
        send: Send,
        model: Callable[[], SpeechModel],
        max_speech_ms: int,
        started: Callable[[str, int], Live | None],
        ended: Callable[[Utterance], Awaitable[None]],
    ) -> None:
        self.config = SessionConfig()
        self.quiet = asyncio.Event()  # no utterance is being spoken
        self.quiet.set()
        self.closing = False  # the session settled while draining: audio is not listened to
        self._send = send
        self._model = model
        self._max_speech_ms = max_speech_ms
        self._started = started
        self._ended = ended
        self._resampler = Resampler(self.config.sample_rate)
        self._buffer = AudioBuffer()
        self._detector = self._new_detector()
        self._committed = 0  # stream position up to which audio was committed
        self._item_id: str | None = None  # the utterance being spoken (server VAD)
        self._previous_item_id: str | None = None
        self._live: Live | None = None  # the utterance being spoken into vLLM's endpoint

    def configure(self, config: SessionConfig) -> None:
        old, self.config = self.config, config
        if config.sample_rate != old.sample_rate:
            self._resampler = Resampler(config.sample_rate)
        if config.turn_detection != old.turn_detection:
            self.clear()  # the detector's state belongs to the old settings

    async def append(self, pcm: bytes) -> None:
        if len(pcm) % SAMPLE_BYTES:
            raise EventError(
                "'audio' must hold whole 16-bit samples (an even number of bytes).",
                "invalid_value",
                "audio",
            )
        self._check_room(len(pcm) * RATE // self.config.sample_rate)
        if not self.closing:
            await self._hear(self._resampler(pcm))

    async def hear(self, samples: npt.NDArray[np.int16]) -> None:
        """16 kHz samples, as a WebRTC call decodes them (`realtime.call`), in as appended
        PCM goes once resampled."""
        self._check_room(len(samples) * SAMPLE_BYTES)
        if not self.closing:
            await self._hear(samples)

    async def _hear(self, samples: npt.NDArray[np.int16]) -> None:
        self._buffer.append(samples)
        if self.config.turn_detection is None:
            return
        changes = await self._detector.hear(samples)
        if self.closing:  # settled while a thread judged it: no utterance may begin
            return
        for change in changes:
            await self._on_vad(change)
        if self._live is not None:
            self._live.send_until(self._buffer, self._buffer.heard)
        self._buffer.trim(self._detector.keep_from)

    def _check_room(self, incoming: int) -> None:
        """With manual commits, `incoming` more bytes must fit in the buffer."""
        if self.config.turn_detection is None and (
            self._buffer.held_bytes + incoming > MAX_BUFFER_SECONDS * RATE * SAMPLE_BYTES
        ):
            raise EventError(
                f"The input audio buffer holds {MAX_BUFFER_SECONDS // 60} minutes at most: "
                "commit it, or turn server VAD on.",
                "input_audio_buffer_full",
                "audio",
            )

    async def commit(self) -> None:
        """The client's commit: everything not committed yet becomes an utterance."""
        heard = self._buffer.heard
        if heard - self._committed < MIN_COMMIT_MS * RATE // 1000:
            kept = _ms(heard - self._committed)
            raise EventError(
                f"Error committing input audio buffer: buffer too small. Expected at least "
                f"{MIN_COMMIT_MS}ms of audio, but buffer only has {kept:.2f}ms of audio.",
                "input_audio_buffer_commit_empty",
            )
        item_id = self._item_id or events.new_id("item")
        if self._item_id is not None:  # speech in progress: it ends here
            await self._send(events.speech_stopped(item_id, _ms(heard)))
            self._item_id = None
        self._detector = self._new_detector(start=heard)
        await self._end(item_id, heard)

    def clear(self) -> None:
        """Forget the audio not committed yet, and any speech in progress."""
        if self._live is not None:
            self._live.end(cancelled=True)
            self._live = None
        heard = self._buffer.heard
        self._buffer.trim(heard)
        self._committed = heard
        self._item_id = None
        self.quiet.set()
        self._detector = self._new_detector(start=heard)

    async def _on_vad(self, change: SpeechStarted | SpeechStopped) -> None:
        if isinstance(change, SpeechStarted):
            self.quiet.clear()
            self._item_id = events.new_id("item")
            self._committed = change.audio_start
            await self._send(events.speech_started(self._item_id, _ms(change.audio_start)))
            self._live = self._started(self._item_id, change.audio_start)
            return
        end = min(change.sample + round(TAIL_SECONDS * RATE), change.audio_end)
        item_id, self._item_id = self._item_id or events.new_id("item"), None
        await self._send(events.speech_stopped(item_id, _ms(end)))
        await self._end(item_id, end)

    async def _end(self, item_id: str, end: int) -> None:
        """The utterance that began at `_committed` ends at `end`: commit it, hand it on."""
        live, self._live = self._live, None
        try:
            samples = self._buffer.samples(self._committed, end) if live is None else None
            if live is not None:
                live.send_until(self._buffer, end)
                live.end()
            self._committed = end
            self._buffer.trim(end)
            await self._send(events.buffer_committed(item_id, self._previous_item_id))
            for event in events.item_events(self.config, item_id, self._previous_item_id):
                await self._send(event)
            self._previous_item_id = item_id
            if samples is not None:
                await self._ended(Utterance(item_id, Audio(samples)))
        finally:
            self.quiet.set()  # handed on: `settled` now waits on the transcription

    def _new_detector(self, start: int = 0) -> SpeechDetector:
        """A detector for the stream from position `start` on (after a commit or a clear)."""
        vad = self.config.turn_detection or ServerVad()
        return SpeechDetector(
            self._model(),
            threshold=vad.threshold,
            silence_ms=vad.silence_duration_ms,
            prefix_ms=vad.prefix_padding_ms,
            max_speech_ms=self._max_speech_ms,
            start=start,
        )


def _ms(samples: int) -> int:
    return samples * 1000 // RATE
