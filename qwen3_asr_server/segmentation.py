"""Cut long recordings at pauses into pieces Qwen3-ASR can take in one go.

The model hears at most ~30 s at a time. Cutting at pauses, not at fixed offsets, keeps
words whole, lets every piece be transcribed concurrently, and gives each piece a real
offset for timestamps. Detection is plain frame energy (numpy only, no model): a frame is
speech when it is louder than a threshold that adapts to the recording but never drops
below an absolute floor, so a silent file yields nothing at all.

`Chunking` holds what a client may tune (OpenAI's `chunking_strategy`): how far above the
noise speech must stand, the shortest pause that separates speech, the padding kept before
speech, and whether every such pause ends a piece (server VAD) or pieces are grouped up to
the window and cut at the best pause (the default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FRAME_SECONDS = 0.02  # energy is judged per 20 ms frame
FLOOR_DBFS = -55.0  # frames quieter than this (RMS) are never speech
NOISE_MARGIN_DB = 10.0  # speech stands this far above the noise floor ...
SPEECH_RANGE_DB = 30.0  # ... but the threshold stays this far below the loud speech
NOISE_PERCENTILE = 10.0  # frame level taken as the noise floor
SPEECH_PERCENTILE = 95.0  # frame level taken as loud speech
MIN_PAUSE_SECONDS = 0.3  # shorter gaps are breaths inside speech, never a pause
LONG_PAUSE_SECONDS = 2.0  # a pause this long always ends a span: no seconds of silence sent
MIN_SPEECH_SECONDS = 0.1  # shorter lone bursts (clicks) are not speech
PAD_SECONDS = 0.15  # context kept around speech at either end of a span
SILENCE_RATE = 16_000  # rate is_silent assumes unless told
# OpenAI's server VAD: its defaults and bounds (Realtime turn detection, chunking_strategy)
VAD_THRESHOLD = 0.5
VAD_PREFIX_PADDING_MS = 300
VAD_SILENCE_MS = 500
MAX_PREFIX_PADDING_MS = 5_000
SILENCE_DURATION_MS = (100, 10_000)  # below 100 ms every pause between words ends a turn
_BLOCK_FRAMES = 8192  # frames converted to float at a time, to stay memory-lean
_LOOK_FRAMES = 50  # frames is_silent judges at a time, until it has heard enough
_FULL_SCALE = 32768.0
_MIN_DB = -120.0

Samples = npt.NDArray[np.int16]
Frames = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Chunking:
    """How speech is found and where pieces end; the defaults are this server's own cut."""

    margin_db: float = NOISE_MARGIN_DB  # speech stands this far above the noise floor
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
        """OpenAI's `server_vad` chunking on frame energy: every pause of
        `silence_duration_ms` ends a piece, which starts `prefix_padding_ms` before its
        speech; `threshold` scales how far above the noise speech must stand (0.5: the
        default margin, 1: twice that, 0: any frame above the noise floor)."""
        return cls(
            margin_db=2 * threshold * NOISE_MARGIN_DB,
            min_pause=silence_duration_ms / 1000,
            pad_before=prefix_padding_ms / 1000,
            every_pause=True,
        )


@dataclass(frozen=True)
class Span:
    """Samples `start:end` of the recording (end exclusive)."""

    start: int
    end: int

    def seconds(self, rate: int) -> tuple[float, float]:
        """Start and end in seconds, for timestamps offset into the whole recording."""
        return self.start / rate, self.end / rate


def _frame_db(samples: Samples, frame: int) -> npt.NDArray[np.float64]:
    """RMS level of every frame in dBFS; the last frame may be partial."""
    full, tail = divmod(len(samples), frame)
    power = np.empty(full + (1 if tail else 0), dtype=np.float64)
    body = samples[: full * frame].reshape(full, frame)
    for first in range(0, full, _BLOCK_FRAMES):
        block = body[first : first + _BLOCK_FRAMES].astype(np.float32)
        power[first : first + len(block)] = np.einsum("ij,ij->i", block, block) / frame
    if tail:
        rest = samples[full * frame :].astype(np.float64)
        power[-1] = float(np.mean(rest * rest))
    level: npt.NDArray[np.float64] = 10 * np.log10(power / _FULL_SCALE**2 + 10 ** (_MIN_DB / 10))
    return level


def _speech_runs(
    db: npt.NDArray[np.float64], rate: int, frame: int, chunking: Chunking
) -> tuple[Frames, Frames]:
    """Start and end frames of speech, with breaths bridged and lone clicks dropped."""
    noise, loud = np.percentile(db, [NOISE_PERCENTILE, SPEECH_PERCENTILE])
    threshold = max(FLOOR_DBFS, min(noise + chunking.margin_db, loud - SPEECH_RANGE_DB))
    edges = np.diff((db > threshold).astype(np.int8), prepend=0, append=0)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if len(starts) == 0:
        return starts, ends
    real = np.flatnonzero(
        starts[1:] - ends[:-1] >= max(1, round(chunking.min_pause * rate / frame))
    )
    starts = np.concatenate([starts[:1], starts[1:][real]])
    ends = np.concatenate([ends[:-1][real], ends[-1:]])
    kept = ends - starts >= round(MIN_SPEECH_SECONDS * rate / frame)
    return starts[kept], ends[kept]


def _last_max(values: Frames) -> int:
    """Index of the largest value, the later one on ties (later cuts make longer spans)."""
    return len(values) - 1 - int(np.argmax(values[::-1]))


def _group(
    starts: Frames, ends: Frames, db: npt.NDArray[np.float64], budget: int, long_pause: int
) -> list[tuple[int, int]]:
    """Greedy spans of speech frames, each at most `budget` frames, ended at good pauses."""
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
        else:  # continuous speech for the whole window: cut at its quietest frame
            low = begin + max(1, budget // 2)
            quietest = low + int(np.argmin(db[low : limit + 1]))
            spans.append((begin, quietest))
            begin = quietest
            continue
        spans.append((begin, int(ends[cut])))
        run, begin = cut + 1, int(starts[cut + 1])


def split(
    samples: Samples, rate: int, max_seconds: float = 30.0, chunking: Chunking | None = None
) -> list[Span]:
    """Speech spans in order, each at most max_seconds long, cut at pauses.

    Spans never overlap, keep their padding of context around their speech where the
    neighbours leave room, and leave out silence at either end and long silences between.
    Unless every pause ends a piece, a clip no longer than max_seconds gives at most one
    span, so short requests stay cheap.
    """
    chunking = chunking or Chunking()
    if samples.ndim != 1:
        raise ValueError("samples must be one-dimensional (mono)")
    if rate <= 0 or not (math.isfinite(max_seconds) and max_seconds > 0):
        raise ValueError("rate and max_seconds must be positive")
    frame = max(1, round(FRAME_SECONDS * rate))
    max_len = round(max_seconds * rate)
    before = min(round(chunking.pad_before * rate), max_len // 4)
    after = min(round(chunking.pad_after * rate), max_len // 4)
    budget = (max_len - before - after) // frame
    if budget < 1:
        raise ValueError("max_seconds is shorter than one analysis frame")
    n = len(samples)
    if n == 0:
        return []
    db = _frame_db(samples, frame)
    starts, ends = _speech_runs(db, rate, frame, chunking)
    if len(starts) == 0:
        return []
    if n <= max_len and not chunking.every_pause:
        first, last = int(starts[0]) * frame, int(ends[-1]) * frame
        return [Span(max(0, first - before), min(n, last + after))]
    long_pause = round(LONG_PAUSE_SECONDS * rate / frame)
    if chunking.every_pause:  # each run alone, cut further only if it outlasts the window
        groups = [
            group
            for run in range(len(starts))
            for group in _group(starts[run : run + 1], ends[run : run + 1], db, budget, 0)
        ]
    else:
        groups = _group(starts, ends, db, budget, long_pause)
    cores = [(first * frame, min(n, last * frame)) for first, last in groups]
    spans = []
    for index, (start, end) in enumerate(cores):
        previous = cores[index - 1][1] if index else 0
        following = cores[index + 1][0] if index + 1 < len(cores) else n
        low = 0 if index == 0 else previous + (start - previous) // 2
        high = n if index + 1 == len(cores) else end + (following - end) // 2
        spans.append(Span(max(start - before, low), min(end + after, high)))
    return spans


def is_silent(samples: Samples, rate: int = SILENCE_RATE) -> bool:
    """Whether under a click's worth of audio rises above the floor: no request worth sending.

    This is absolute, not relative to the recording, so it is cheap and never mistakes a
    quiet speaker for silence; faint hiss and digital silence are both silent.
    """
    frame = max(1, round(FRAME_SECONDS * rate))
    needed = round(MIN_SPEECH_SECONDS * rate / frame)
    step = frame * _LOOK_FRAMES
    loud = 0
    for start in range(0, len(samples), step):  # speech is usually found in the first look
        loud += int(np.count_nonzero(_frame_db(samples[start : start + step], frame) > FLOOR_DBFS))
        if loud >= needed:
            return False
    return True
