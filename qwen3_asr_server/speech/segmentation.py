"""Cut long recordings at pauses into pieces Qwen3-ASR can take in one go.

The model hears at most ~30 s at a time. Cutting at pauses, not at fixed offsets, keeps
words whole, lets every piece be transcribed concurrently, and gives each piece a real
offset for timestamps. Pauses are where Silero VAD heard no speech: `split` takes its speech
probability for every 32 ms window of the recording (`speech.SpeechModel.recording`) and
is pure. Frame energy, which it used before, put a quarter of its cuts inside sentences in
pink noise at 20 and 10 dB SNR, where Silero put none (`scripts/cut_quality.py`,
docs/features/audio.md).

`is_silent` stays on frame energy against an absolute floor: it only spares the model a clip
with nothing in it, costs nothing on the path every short request takes, and can never drop a
voice the network would not recognise; noise it lets through, the model calls no speech.

`Chunking` holds what a client may tune (OpenAI's `chunking_strategy`): the speech
probability a window needs, the shortest pause that separates speech, the padding kept before
speech, and whether every such pause ends a piece (server VAD) or pieces are grouped up to
the window and cut at the best pause (the default).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .audio import RATE
from .silero import NEGATIVE_MARGIN, WINDOW, Probabilities

FRAME_SECONDS = 0.02  # is_silent judges energy per 20 ms frame
FLOOR_DBFS = -55.0  # frames quieter than this (RMS) are never speech
MIN_PAUSE_SECONDS = 0.3  # shorter gaps are breaths inside speech, never a pause
LONG_PAUSE_SECONDS = 2.0  # a pause this long always ends a span: no seconds of silence sent
MIN_SPEECH_SECONDS = 0.1  # shorter lone bursts (clicks) are not speech
PAD_SECONDS = 0.15  # context kept around speech at either end of a span
# OpenAI's server VAD: its defaults and bounds (Realtime turn detection, chunking_strategy)
VAD_THRESHOLD = 0.5
VAD_PREFIX_PADDING_MS = 300
VAD_SILENCE_MS = 500
MAX_PREFIX_PADDING_MS = 5_000
SILENCE_DURATION_MS = (100, 10_000)  # below 100 ms every pause between words ends a turn
_LOOK_FRAMES = 50  # frames is_silent judges at a time, until it has heard enough
_FULL_SCALE = 32768.0
_MIN_DB = -120.0

Samples = npt.NDArray[np.int16]
Frames = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Chunking:
    """How speech is found and where pieces end; the defaults are this server's own cut."""

    threshold: float = VAD_THRESHOLD  # the speech probability a window needs
    min_pause: float = MIN_PAUSE_SECONDS  # shorter gaps are inside speech
    pad_before: float = PAD_SECONDS
    pad_after: float = PAD_SECONDS
    every_pause: bool = False  # every pause of `min_pause` ends a piece

    @classmethod
    def server_vad(
        cls,
        threshold: float = VAD_THRESHOLD,
        prefix_padding_ms: int = VAD_PREFIX_PADDING_MS,
        silence_duration_ms: int = VAD_SILENCE_MS,
    ) -> Chunking:
        """OpenAI's `server_vad` chunking, as Realtime's: every pause of
        `silence_duration_ms` ends a piece, which starts `prefix_padding_ms` before its
        speech; `threshold` is the speech probability a window needs."""
        return cls(
            threshold=threshold,
            min_pause=silence_duration_ms / 1000,
            pad_before=prefix_padding_ms / 1000,
            every_pause=True,
        )


@dataclass(frozen=True)
class Span:
    """Samples `start:end` of the recording (end exclusive), and who speaks there, when a
    diarizer said (its label, "A" or a known speaker's name)."""

    start: int
    end: int
    speaker: str | None = None

    def seconds(self, rate: int) -> tuple[float, float]:
        """Start and end in seconds, for timestamps offset into the whole recording."""
        return self.start / rate, self.end / rate


def speech_runs(probabilities: Probabilities, chunking: Chunking) -> tuple[Frames, Frames]:
    """Start and end windows of speech, as the Realtime VAD hears it: from a window at
    `threshold` on while the probability stays above `threshold - NEGATIVE_MARGIN`, pauses
    shorter than `min_pause` bridged, lone bursts shorter than MIN_SPEECH_SECONDS dropped."""
    threshold = chunking.threshold
    strong = probabilities >= threshold
    weak = probabilities >= min(threshold, max(threshold - NEGATIVE_MARGIN, 0.01))
    edges = np.diff(weak.astype(np.int8), prepend=0, append=0)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    heard = np.concatenate([[0], np.cumsum(strong)])
    voiced = heard[ends] > heard[starts]
    starts, ends = starts[voiced], ends[voiced]
    if len(starts) == 0:
        return starts, ends
    starts = np.flatnonzero(strong)[heard[starts]]  # each run's first window at threshold
    real = np.flatnonzero(
        starts[1:] - ends[:-1] >= max(1, round(chunking.min_pause * RATE / WINDOW))
    )
    starts = np.concatenate([starts[:1], starts[1:][real]])
    ends = np.concatenate([ends[:-1][real], ends[-1:]])
    kept = ends - starts >= round(MIN_SPEECH_SECONDS * RATE / WINDOW)
    return starts[kept], ends[kept]


def speech(
    probabilities: Probabilities, length: int, chunking: Chunking | None = None
) -> list[Span]:
    """Where a recording of `length` samples holds speech, without padding, as `split` hears
    it: pauses shorter than the chunking's `min_pause` bridged, clicks dropped."""
    starts, ends = speech_runs(probabilities, chunking or Chunking())
    return [
        Span(int(start) * WINDOW, min(length, int(end) * WINDOW))
        for start, end in zip(starts, ends, strict=True)
    ]


def _last_max(values: Frames) -> int:
    """Index of the largest value, the later one on ties (later cuts make longer spans)."""
    return len(values) - 1 - int(np.argmax(values[::-1]))


# Where continuous speech from window `low` to `high` (inclusive) is cut: where it is least sure
Quietest = Callable[[int, int], int]


def _group(
    starts: Frames, ends: Frames, quietest: Quietest, budget: int, long_pause: int
) -> list[tuple[int, int]]:
    """Greedy spans of speech windows, each at most `budget` windows, ended at good pauses:
    a long pause first, else the longest one in the window's later half."""
    gaps = starts[1:] - ends[:-1]  # gaps[m]: the pause after run m
    long_gaps = np.flatnonzero(gaps >= long_pause)
    spans: list[tuple[int, int]] = []
    run, begin = 0, int(starts[0])
    while True:
        limit = begin + budget
        fits = int(np.searchsorted(ends, limit, side="right"))  # runs before it end in window
        first_long = int(np.searchsorted(long_gaps, run))
        if first_long < len(long_gaps) and long_gaps[first_long] < fits:
            cut = int(long_gaps[first_long])
        elif fits == len(starts):
            spans.append((begin, int(ends[-1])))
            return spans
        elif fits > run:  # a pause lies in the window: the longest in its later half
            late = np.flatnonzero(ends[run:fits] >= begin + budget // 2)
            pool = late + run if len(late) else np.arange(run, fits)
            cut = int(pool[_last_max(gaps[pool])])
        else:  # continuous speech for the whole window: cut where speech is least sure
            cut = quietest(begin + max(1, budget // 2), limit)
            spans.append((begin, cut))
            begin = cut
            continue
        spans.append((begin, int(ends[cut])))
        run, begin = cut + 1, int(starts[cut + 1])


@dataclass(frozen=True)
class Limits:
    """A piece's bounds in samples (`length`, the padding `before` and `after` its speech) and
    the speech windows it may hold (`budget`)."""

    length: int
    before: int
    after: int
    budget: int

    @classmethod
    def of(cls, max_seconds: float, chunking: Chunking) -> Limits:
        if not (math.isfinite(max_seconds) and max_seconds > 0):
            raise ValueError("max_seconds must be positive")
        length = round(max_seconds * RATE)
        before = min(round(chunking.pad_before * RATE), length // 4)
        after = min(round(chunking.pad_after * RATE), length // 4)
        budget = (length - before - after) // WINDOW
        if budget < 1:
            raise ValueError("max_seconds is shorter than one window")
        return cls(length, before, after, budget)


def groups(
    starts: Frames, ends: Frames, quietest: Quietest, budget: int, every_pause: bool
) -> list[tuple[int, int]]:
    """The first and last speech window of each piece, from the runs of speech: every run
    alone when every pause ends a piece (cut further only if it outlasts the window), else
    runs grouped up to the window."""
    if not every_pause:
        return _group(starts, ends, quietest, budget, round(LONG_PAUSE_SECONDS * RATE / WINDOW))
    return [
        group
        for run in range(len(starts))
        for group in _group(starts[run : run + 1], ends[run : run + 1], quietest, budget, 0)
    ]


def padded(cores: list[tuple[int, int]], length: int, limits: Limits) -> list[Span]:
    """Pieces of a recording of `length` samples around their speech (`cores`, in samples):
    padded where the neighbours leave room, never overlapping."""
    spans = []
    for index, (start, end) in enumerate(cores):
        previous = cores[index - 1][1] if index else 0
        following = cores[index + 1][0] if index + 1 < len(cores) else length
        low = 0 if index == 0 else previous + (start - previous) // 2
        high = length if index + 1 == len(cores) else end + (following - end) // 2
        spans.append(Span(max(start - limits.before, low), min(end + limits.after, high)))
    return spans


def split(
    probabilities: Probabilities,
    length: int,
    max_seconds: float = 30.0,
    chunking: Chunking | None = None,
) -> list[Span]:
    """Speech spans of a 16 kHz recording of `length` samples, in order, each at most
    max_seconds long, cut at pauses; `probabilities` are Silero's, one per window.

    Spans never overlap, keep their padding of context around their speech where the
    neighbours leave room, and leave out silence at either end and long silences between.
    Unless every pause ends a piece, a clip no longer than max_seconds gives at most one
    span, so short requests stay cheap.
    """
    chunking = chunking or Chunking()
    if probabilities.ndim != 1 or len(probabilities) != -(-length // WINDOW):
        raise ValueError("probabilities must be one per window of the recording")
    limits = Limits.of(max_seconds, chunking)
    starts, ends = speech_runs(probabilities, chunking)
    if len(starts) == 0:
        return []
    if length <= limits.length and not chunking.every_pause:
        found = [(int(starts[0]), int(ends[-1]))]  # one piece: from the first speech to the last
    else:

        def quietest(low: int, high: int) -> int:
            return low + int(np.argmin(probabilities[low : high + 1]))

        found = groups(starts, ends, quietest, limits.budget, chunking.every_pause)
    cores = [(first * WINDOW, min(length, last * WINDOW)) for first, last in found]
    return padded(cores, length, limits)


def _frame_db(samples: Samples, frame: int) -> npt.NDArray[np.float64]:
    """RMS level of every frame in dBFS; the last frame may be partial."""
    full, tail = divmod(len(samples), frame)
    power = np.empty(full + (1 if tail else 0), dtype=np.float64)
    body = samples[: full * frame].reshape(full, frame)
    block = body.astype(np.float32)
    power[:full] = np.einsum("ij,ij->i", block, block) / frame
    if tail:
        rest = samples[full * frame :].astype(np.float64)
        power[-1] = float(np.mean(rest * rest))
    level: npt.NDArray[np.float64] = 10 * np.log10(power / _FULL_SCALE**2 + 10 ** (_MIN_DB / 10))
    return level


def is_silent(samples: Samples, rate: int = RATE) -> bool:
    """Whether under a click's worth of audio rises above the floor: no request worth sending.

    This is absolute, not relative to the recording, so it is cheap and never mistakes a
    quiet speaker for silence; faint hiss and digital silence are both silent. It judges a
    second at a time and stops once it heard enough: speech is usually found at once.
    """
    frame = max(1, round(FRAME_SECONDS * rate))
    needed = round(MIN_SPEECH_SECONDS * rate / frame)
    step = frame * _LOOK_FRAMES
    loud = 0
    for start in range(0, len(samples), step):
        loud += int(np.count_nonzero(_frame_db(samples[start : start + step], frame) > FLOOR_DBFS))
        if loud >= needed:
            return False
    return True
