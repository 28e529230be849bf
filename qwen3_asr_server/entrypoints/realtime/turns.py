"""A Realtime session's input audio buffer and its turns.

Appended audio (PCM, or G.711 expanded) is resampled to 16 kHz and kept in the buffer. With
server VAD on, the detector cuts it into utterances (and an idle timeout commits a silence
that lasts that long); with it off, the client's commit does. An utterance that ends is
committed (its events sent) and handed on: its samples to the transcription worker, or,
while it is spoken into vLLM's own endpoint, the rest of its audio to that relay. The buffer
never holds more than one utterance (server VAD) or MAX_BUFFER_SECONDS (manual commits).

At a pause of PAUSE_MS inside an utterance the worker starts transcribing it so far
(`speculation`), unless it is relayed live; the utterance is handed on with that
speculation when its turn ends where the pause began, and the speculation is dropped when
speech resumes. With semantic_vad, an end-of-turn judge (`TurnJudge`), if the server has
one, is asked at each such pause whether the speaker is done; if so the turn ends there,
without waiting the rest of what `eagerness` allows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ...errors import EventError
from ...speech import g711
from ...speech.audio import RATE, Audio, Resampler
from ...speech.silero import SpeechModel
from ...speech.vad import SpeechDetector, SpeechStarted, SpeechStopped
from . import server_events as events
from .buffer import SAMPLE_BYTES, AudioBuffer
from .live import Live
from .protocol import G711, SemanticVad, ServerVad, SessionConfig
from .server_events import Send
from .speculation import PAUSE_MS, Speculation
from .transcriber import Utterance

MAX_BUFFER_SECONDS = 600  # manual commits: 19 MB of 16 kHz audio at most, then appends fail
MIN_COMMIT_MS = 100  # OpenAI refuses to commit less
TAIL_SECONDS = 0.15  # audio kept after the last speech window, as segmentation pads its spans
TAIL = round(TAIL_SECONDS * RATE)  # within PAUSE_MS: a pause has heard its utterance's end
COMPLETE = 0.5  # a judge's probability at or above which the turn is over


class TurnJudge(Protocol):
    """An end-of-turn model: the utterance's 16 kHz samples so far, up to a pause, in; the
    probability that the speaker is done, out. Called in a thread."""

    def __call__(self, samples: npt.NDArray[np.int16], /) -> float: ...


class Speculator(Protocol):
    """Who transcribes an utterance before its turn ends (`transcriber.Transcriber`)."""

    def speculate(
        self, item_id: str, spoken: Audio, start: int, end: int
    ) -> Speculation | None: ...

    def drop(self, speculation: Speculation) -> None: ...


class Turns:
    """`started` is asked, when speech starts, for a live relay of it (None: there is none);
    `ended` gets every utterance that is not relayed live. `speculator` transcribes at
    pauses, `judge` ends semantic_vad turns at them (both optional)."""

    def __init__(
        self,
        send: Send,
        model: Callable[[], SpeechModel],
        max_speech_ms: int,
        started: Callable[[str, int], Live | None],
        ended: Callable[[Utterance], Awaitable[None]],
        speculator: Speculator | None = None,
        judge: TurnJudge | None = None,
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
        self._decode = _decoder(self.config)
        self._buffer = AudioBuffer()
        self._detector = self._new_detector()
        self._committed = 0  # stream position up to which audio was committed
        self._item_id: str | None = None  # the utterance being spoken (server VAD)
        self._previous_item_id: str | None = None
        self._live: Live | None = None  # the utterance being spoken into vLLM's endpoint
        self._speculator = speculator
        self._speculation: Speculation | None = None  # of the utterance being spoken
        self._judge = judge
        self._judged: int | None = None  # where the pause it was last asked about began

    def configure(self, config: SessionConfig) -> None:
        old, self.config = self.config, config
        if (config.encoding, config.sample_rate) != (old.encoding, old.sample_rate):
            self._decode = _decoder(config)
        if config.turn_detection != old.turn_detection:
            self.clear()  # the detector's state belongs to the old settings

    async def append(self, data: bytes) -> None:
        width = self.config.sample_bytes  # G.711 has one byte a sample: any count is whole
        if len(data) % width:
            raise EventError(
                "'audio' must hold whole 16-bit samples (an even number of bytes).",
                "invalid_value",
                "audio",
            )
        self._check_room(len(data) // width * RATE // self.config.sample_rate * SAMPLE_BYTES)
        if not self.closing:
            await self._hear(self._decode(data))

    async def hear(self, samples: npt.NDArray[np.int16]) -> None:
        """16 kHz samples, as a WebRTC call decodes them (`entrypoints.realtime.call`), in as
        appended audio goes once decoded."""
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
        await self._idle()
        if self._live is not None:
            self._live.send_until(self._buffer, self._buffer.heard)
        await self._at_pause()
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
        self._drop()
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

    async def _idle(self) -> None:
        """server_vad's `idle_timeout_ms`: no speech heard for that long since the last turn
        ended (or the session began, or the buffer was committed or cleared) commits that
        silence as an item, counted in audio received, as OpenAI does. The buffer holds only
        its last `prefix_padding_ms` (the rest is no utterance's); that goes to the worker as
        any utterance does, and audio under the noise floor never reaches the model."""
        vad, heard = self.config.turn_detection, self._buffer.heard
        timeout = None if vad is None else vad.idle_timeout_ms
        if timeout is None or self._item_id is not None:
            return
        if heard - self._committed < timeout * RATE // 1000:
            return
        item_id = events.new_id("item")
        await self._send(events.timeout_triggered(item_id, _ms(self._committed), _ms(heard)))
        self._detector = self._new_detector(start=heard)
        await self._end(item_id, heard)

    async def _at_pause(self) -> None:
        """At a pause in the utterance: transcribe it so far (again, if speech went on since
        the last one), and ask the judge, with semantic_vad, whether the turn is over."""
        pause = self._detector.paused(PAUSE_MS)
        end = None if pause is None else pause + TAIL  # where the turn would end
        if self._speculation is not None and self._speculation.end != end:
            self._drop()
        if end is None or self._item_id is None or self._live is not None:
            return
        if self._speculation is None and self._speculator is not None:
            spoken = Audio(self._buffer.samples(self._committed, end))
            self._speculation = self._speculator.speculate(
                self._item_id, spoken, self._committed, end
            )
        semantic = isinstance(self.config.turn_detection, SemanticVad)
        if semantic and self._judge is not None and self._judged != end:
            self._judged = end
            samples = self._buffer.samples(self._committed, self._buffer.heard)
            done = await asyncio.to_thread(self._judge, samples) >= COMPLETE
            for change in self._detector.flush() if done and not self.closing else ():
                await self._on_vad(change)  # ends at the pause, as the silence would have

    def _drop(self) -> None:
        speculation, self._speculation = self._speculation, None
        if speculation is not None and self._speculator is not None:
            self._speculator.drop(speculation)

    def _kept(self, end: int) -> Speculation | None:
        """The speculation, if its audio is the utterance's, `_committed` to `end`."""
        speculation = self._speculation
        if speculation is None or (speculation.start, speculation.end) != (self._committed, end):
            self._drop()
            return None
        self._speculation = None
        return speculation

    async def _end(self, item_id: str, end: int) -> None:
        """The utterance that began at `_committed` ends at `end`: commit it, hand it on."""
        live, self._live = self._live, None
        try:
            samples = self._buffer.samples(self._committed, end) if live is None else None
            speculation = self._kept(end) if live is None else None
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
                await self._ended(Utterance(item_id, Audio(samples), speculation))
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


def _decoder(config: SessionConfig) -> Callable[[bytes], npt.NDArray[np.int16]]:
    """How the session's appended bytes become 16 kHz samples."""
    if config.encoding in G711:
        return g711.Decoder(config.encoding)
    return Resampler(config.sample_rate)


def _ms(samples: int) -> int:
    return samples * 1000 // RATE
