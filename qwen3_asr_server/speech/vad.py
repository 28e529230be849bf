"""Streaming voice activity detection for Realtime transcription (OpenAI's `server_vad`) and
for the end of a Wyoming command (`entrypoints/wyoming/endpoint`).

A session feeds 16 kHz mono int16 chunks of any size to `SpeechDetector.feed` (from the event
loop: `hear`) and gets the events they completed, in order. Positions are sample indices from
the start of the stream and depend only on the audio, never on how it was chunked. Each event
also says which audio to send to the model (OpenAI's `audio_start_ms` / `audio_end_ms`):
utterances never overlap, and the audio between them is silence nobody needs, so a caller may
drop audio before `keep_from`.

Judged by Silero VAD, a small neural network that gives every 32 ms window the probability
that it holds speech: frame energy against a fixed level heard noise at 20 dB SNR as endless
speech and missed a quiet talker at -45 dBFS, where Silero finds both sentence ends (see
docs/features/realtime.md). `threshold` is that probability, as in OpenAI's API. Speech
starts at the first window of a run of MIN_SPEECH_SECONDS at or above it (reported once the
run is that long) and stops at the end of its last speech window once `silence_ms` followed below
`threshold - NEGATIVE_MARGIN` (Silero's own hysteresis: a voice trailing off is still a
voice). An utterance never exceeds `max_speech_ms` (Qwen3-ASR hears 30 s at most): it is cut
there as if silence had followed, so if the voice goes on, the next utterance starts right at
the cut (its prefix clipped to it). Memory is constant: the model's state, the partial window
and a few counters; the model itself is loaded once per process (`SpeechModel`) and shared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .audio import RATE
from .segmentation import MIN_SPEECH_SECONDS
from .silero import CONTEXT, FULL_SCALE, NEGATIVE_MARGIN, WINDOW, SpeechModel


@dataclass(frozen=True)
class SpeechStarted:
    """Speech from `sample` on; its utterance's audio begins `prefix_ms` earlier at
    `audio_start`, but never before the stream or the previous utterance's audio end."""

    sample: int
    audio_start: int


@dataclass(frozen=True)
class SpeechStopped:
    """Speech until `sample`; its utterance's audio ends where this was decided, `audio_end`
    (after the silence, at the cut, or where `flush` was called)."""

    sample: int
    audio_end: int


VadEvent = SpeechStarted | SpeechStopped


class SpeechDetector:
    """Turns a stream of audio chunks into speech start and stop events; see the module."""

    def __init__(
        self,
        model: SpeechModel,
        threshold: float = 0.5,
        silence_ms: int = 500,
        prefix_ms: int = 300,
        max_speech_ms: int = 30_000,
        rate: int = RATE,
        start: int = 0,
    ) -> None:
        if rate != RATE:
            raise ValueError("Silero VAD judges 16 kHz audio here")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must lie between 0 and 1")
        if silence_ms < 0 or prefix_ms < 0:
            raise ValueError("silence_ms and prefix_ms must not be negative")
        self._model = model
        self._frame = WINDOW
        self._threshold = threshold
        self._negative = max(threshold - NEGATIVE_MARGIN, 0.01)
        self._min_frames = max(1, round(MIN_SPEECH_SECONDS * rate / self._frame))
        self._silence_frames = max(1, round(silence_ms * rate / 1000 / self._frame))
        self._prefix = round(prefix_ms * rate / 1000)
        self._max = round(max_speech_ms * rate / 1000)
        if self._max < self._prefix + 2 * self._min_frames * self._frame:
            raise ValueError("max_speech_ms must exceed prefix_ms by at least 200 ms")
        self._state = model.initial_state()
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._tail = np.zeros(0, dtype=np.int16)  # samples short of a whole window
        self._frames = 0  # whole windows judged so far
        self._run = 0  # speech windows in a row, while not speaking
        self._quiet = 0  # silent windows in a row, while speaking
        self._last_loud_end = 0
        self._start_at = start  # stream position of the first sample fed (after a commit)
        self._last_end = start  # the previous utterance's audio_end
        self._current: SpeechStarted | None = None

    @property
    def speaking(self) -> bool:
        return self._current is not None

    @property
    def current(self) -> SpeechStarted | None:
        """The start of the speech in progress, or None between utterances."""
        return self._current

    def paused(self, ms: int) -> int | None:
        """Where the speech in progress last ended, while at least `ms` of quiet have followed
        it (a pause the turn may end at); None while speaking on, or between utterances."""
        needed = max(1, round(ms * RATE / 1000 / self._frame))
        if self._current is None or self._quiet < needed:
            return None
        return self._last_loud_end

    @property
    def keep_from(self) -> int:
        """Earliest sample any later event can point to: a caller may drop audio before it."""
        if self._current is not None:
            return self._current.audio_start
        earliest = self._position - self._run * self._frame - self._prefix
        return max(self._last_end, earliest)

    @property
    def _position(self) -> int:
        """Stream position of the end of the last whole window judged."""
        return self._start_at + self._frames * self._frame

    def feed(self, samples: npt.NDArray[np.int16]) -> list[VadEvent]:
        """Take the next chunk of the stream; return the events it completed, in order."""
        windows = self._windows(samples)
        probabilities, self._state = self._model.probabilities(windows, self._state)
        return self._judged(probabilities)

    async def hear(self, samples: npt.NDArray[np.int16]) -> list[VadEvent]:
        """`feed` from the event loop: the windows scored in a thread, in a batch with those
        of the process's other streams (`SpeechModel.score`). One call at a time: the
        detector's state is not shared."""
        windows = self._windows(samples)
        probabilities, self._state = await self._model.score(windows, self._state)
        return self._judged(probabilities)

    def _windows(self, samples: npt.NDArray[np.int16]) -> npt.NDArray[np.float32]:
        """The whole windows the chunk completes, each row its context (the 64 samples before
        it) then the window, scaled to -1..1; what is short of a window kept for the next."""
        if samples.ndim != 1 or samples.dtype != np.int16:
            raise ValueError("samples must be one-dimensional int16 (mono PCM)")
        audio = np.concatenate([self._tail, samples])
        whole = len(audio) // self._frame * self._frame
        self._tail = audio[whole:].copy()
        if not whole:
            return np.zeros((0, CONTEXT + self._frame), dtype=np.float32)
        scaled = np.concatenate([self._context, audio[:whole] / np.float32(FULL_SCALE)])
        scaled = scaled.astype(np.float32, copy=False)
        self._context = scaled[-CONTEXT:].copy()
        rows = np.lib.stride_tricks.sliding_window_view(scaled, CONTEXT + self._frame)
        return np.ascontiguousarray(rows[:: self._frame][: whole // self._frame])

    def _judged(self, probabilities: list[float]) -> list[VadEvent]:
        events: list[VadEvent] = []
        for probability in probabilities:
            self._frames += 1
            self._judge(probability, events)
        return events

    def flush(self) -> list[VadEvent]:
        """End the speech in progress now (the client committed): its audio ends with the last
        whole window fed, the partial one left to the next utterance."""
        events: list[VadEvent] = []
        if self._current is not None:
            self._stop(self._position, events)
        return events

    def _judge(self, probability: float, events: list[VadEvent]) -> None:
        """Advance the state machine by the window just counted in `_frames`."""
        end = self._position
        if self._current is None:
            self._run = self._run + 1 if probability >= self._threshold else 0
            if self._run >= self._min_frames:
                self._start(end - self._run * self._frame, events)
        elif probability >= self._negative:
            self._quiet = 0
            self._last_loud_end = end
        else:
            self._quiet += 1
            if self._quiet >= self._silence_frames:
                self._stop(end, events)
        # Cut at the last window boundary that keeps the utterance within max.
        if self._current is not None and end + self._frame - self._current.audio_start > self._max:
            self._stop(end, events)

    def _start(self, sample: int, events: list[VadEvent]) -> None:
        self._current = SpeechStarted(sample, max(self._last_end, sample - self._prefix))
        self._last_loud_end = self._position
        self._quiet = 0
        events.append(self._current)

    def _stop(self, audio_end: int, events: list[VadEvent]) -> None:
        self._current = None
        self._last_end = audio_end
        self._run = 0
        events.append(SpeechStopped(self._last_loud_end, audio_end))
