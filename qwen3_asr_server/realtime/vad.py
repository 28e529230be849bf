"""Streaming voice activity detection for Realtime transcription (OpenAI's `server_vad`).

A session feeds 16 kHz mono int16 chunks of any size to `SpeechDetector.feed` and gets the
events they completed, in order. Positions are sample indices from the start of the stream and
depend only on the audio, never on how it was chunked. Each event also says which audio to send
to the model (OpenAI's `audio_start_ms` / `audio_end_ms`): utterances never overlap, and the
audio between them is silence nobody needs, so a caller may drop audio before `keep_from`.

Judged like `segmentation`: RMS per 20 ms frame against an absolute level (`threshold_dbfs`),
without adapting, since a live stream has no whole recording to measure. Speech starts at the
first loud frame of a run of MIN_SPEECH_SECONDS (reported once the run is that long, so a lone
click starts nothing) and stops at the end of its last loud frame once `silence_ms` of quiet
followed. An utterance never exceeds `max_speech_ms` (Qwen3-ASR hears 30 s at most): it is cut
there as if silence had followed, so if the voice goes on, the next utterance starts right at
the cut (its prefix clipped to it). Memory is constant: the partial frame and a few counters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..segmentation import FLOOR_DBFS, FRAME_SECONDS, MIN_SPEECH_SECONDS

THRESHOLD_RANGE_DB = 30.0  # OpenAI's threshold 0..1 spans FLOOR_DBFS..FLOOR_DBFS + this
_FULL_SCALE = 32768


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


def threshold_dbfs(threshold: float) -> float:
    """Frame level (RMS dBFS) that counts as speech: 0 -> -55 (the floor, so hiss and digital
    silence never count), 0.5 -> -40 (quiet speech still passes), 1 -> -25 (only loud, close
    speech). Linear in dB, hence monotonic."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError("threshold must lie between 0 and 1")
    return FLOOR_DBFS + threshold * THRESHOLD_RANGE_DB


class SpeechDetector:
    """Turns a stream of audio chunks into speech start and stop events; see the module."""

    def __init__(
        self,
        threshold: float = 0.5,
        silence_ms: int = 500,
        prefix_ms: int = 300,
        max_speech_ms: int = 30_000,
        rate: int = 16_000,
        start: int = 0,
    ) -> None:
        if rate <= 0 or silence_ms < 0 or prefix_ms < 0:
            raise ValueError("rate must be positive, silence_ms and prefix_ms not negative")
        self._frame = max(1, round(FRAME_SECONDS * rate))
        # Squared-sample sums are exact in int64, so a frame's verdict never depends on chunking.
        power = _FULL_SCALE**2 * 10 ** (threshold_dbfs(threshold) / 10)
        self._loud_sum = power * self._frame
        self._min_frames = max(1, round(MIN_SPEECH_SECONDS * rate / self._frame))
        self._silence_frames = max(1, round(silence_ms * rate / 1000 / self._frame))
        self._prefix = round(prefix_ms * rate / 1000)
        self._max = round(max_speech_ms * rate / 1000)
        if self._max < self._prefix + 2 * self._min_frames * self._frame:
            raise ValueError("max_speech_ms must exceed prefix_ms by at least 200 ms")
        self._tail = np.zeros(0, dtype=np.int16)  # samples short of a whole frame
        self._frames = 0  # whole frames judged so far
        self._run = 0  # loud frames in a row, while not speaking
        self._quiet = 0  # quiet frames in a row, while speaking
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

    @property
    def keep_from(self) -> int:
        """Earliest sample any later event can point to: a caller may drop audio before it."""
        if self._current is not None:
            return self._current.audio_start
        earliest = self._position - self._run * self._frame - self._prefix
        return max(self._last_end, earliest)

    @property
    def _position(self) -> int:
        """Stream position of the end of the last whole frame judged."""
        return self._start_at + self._frames * self._frame

    def feed(self, samples: npt.NDArray[np.int16]) -> list[VadEvent]:
        """Take the next chunk of the stream; return the events it completed, in order."""
        if samples.ndim != 1 or samples.dtype != np.int16:
            raise ValueError("samples must be one-dimensional int16 (mono PCM)")
        audio = np.concatenate([self._tail, samples])
        whole = len(audio) // self._frame * self._frame
        self._tail = audio[whole:].copy()
        wide = audio[:whole].astype(np.int64).reshape(-1, self._frame)
        loud = np.einsum("ij,ij->i", wide, wide) > self._loud_sum
        events: list[VadEvent] = []
        for is_loud in loud.tolist():
            self._frames += 1
            self._judge(is_loud, events)
        return events

    def flush(self) -> list[VadEvent]:
        """End the speech in progress now (the client committed): its audio ends with the last
        whole frame fed, the partial one left to the next utterance."""
        events: list[VadEvent] = []
        if self._current is not None:
            self._stop(self._position, events)
        return events

    def _judge(self, loud: bool, events: list[VadEvent]) -> None:
        """Advance the state machine by the frame just counted in `_frames`."""
        end = self._position
        if self._current is None:
            self._run = self._run + 1 if loud else 0
            if self._run >= self._min_frames:
                self._start(end - self._run * self._frame, events)
        elif loud:
            self._quiet = 0
            self._last_loud_end = end
        else:
            self._quiet += 1
            if self._quiet >= self._silence_frames:
                self._stop(end, events)
        # Cut at the last frame boundary that keeps the utterance within max.
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
