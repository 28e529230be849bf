"""segmentation.split on Silero's speech probabilities (drawn here, one per 32 ms window), and
is_silent on frame energy. Real speech through the model: tests/unit/test_speech.py."""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt
import pytest

from qwen3_asr_server.speech.audio import RATE
from qwen3_asr_server.speech.segmentation import (
    FRAME_SECONDS,
    PAD_SECONDS,
    Chunking,
    Span,
    is_silent,
    split,
)
from qwen3_asr_server.speech.silero import WINDOW

PAD = round(PAD_SECONDS * RATE)
SPEECH, PAUSE = 0.95, 0.02  # what Silero says of clear speech and of silence

Probabilities = npt.NDArray[np.float32]
Bursts = list[tuple[int, int]]  # where speech lies, in samples
Piece = tuple[float, float]  # seconds, the probability of every window in them


def windows(seconds: float) -> int:
    return round(seconds * RATE / WINDOW)


def assemble(pieces: list[Piece]) -> tuple[Probabilities, int, Bursts]:
    """Probabilities for pieces of (seconds, probability), the recording's length in samples,
    and where its speech pieces (probability >= 0.5) lie."""
    values = np.concatenate([np.full(windows(s), p, dtype=np.float32) for s, p in pieces])
    bursts: Bursts = []
    at = 0
    for seconds, probability in pieces:
        count = windows(seconds) * WINDOW
        if probability >= 0.5:
            bursts.append((at, at + count))
        at += count
    return values, len(values) * WINDOW, bursts


def starts(pieces: list[Piece]) -> list[int]:
    """Where each piece starts, in samples, and where the last ends."""
    return [0, *itertools.accumulate(windows(seconds) * WINDOW for seconds, _ in pieces)]


def conversation(
    seed: int, seconds: float, phrase_range: tuple[float, float]
) -> tuple[Probabilities, int, Bursts]:
    """Phrases separated by 0.5-1.5 s pauses; speech a little unsure, pauses not quite zero."""
    rng = np.random.default_rng(seed)
    pieces: list[Piece] = [(0.4, PAUSE)]
    total = 0.4
    while total < seconds:
        length, gap = float(rng.uniform(*phrase_range)), float(rng.uniform(0.5, 1.5))
        pieces += [(length, float(rng.uniform(0.7, 1.0))), (gap, float(rng.uniform(0, 0.3)))]
        total += length + gap
    return assemble(pieces)


def check_spans(spans: list[Span], n: int, max_seconds: float) -> None:
    """Ordered, inside the recording, non-overlapping, none longer than allowed."""
    assert spans
    for span in spans:
        assert 0 <= span.start < span.end <= n
        assert span.end - span.start <= round(max_seconds * RATE)
    for left, right in itertools.pairwise(spans):
        assert left.end <= right.start


def check_bursts(spans: list[Span], bursts: Bursts) -> None:
    """Every burst lies wholly in exactly one span; no span edge falls inside a burst."""
    for start, end in bursts:
        holders = [s for s in spans if s.start <= start and end <= s.end]
        assert len(holders) == 1, (start / RATE, end / RATE, spans)
        for span in spans:
            assert not start < span.start < end
            assert not start < span.end < end


def test_one_second_clip_is_one_padded_span() -> None:
    values, n, [(start, end)] = assemble([(0.5, PAUSE), (1.0, SPEECH), (0.5, PAUSE)])
    [span] = split(values, n)
    assert span == Span(start - PAD, end + PAD)
    assert span.seconds(RATE) == (span.start / RATE, span.end / RATE)


@pytest.mark.parametrize("level", [0.0, PAUSE, 0.3, 0.49])
def test_nothing_at_threshold_gives_nothing(level: float) -> None:
    values, n, _ = assemble([(90, level)])
    assert split(values, n) == []


@pytest.mark.parametrize("count", [1, 2])
def test_a_burst_shorter_than_speech_is_not_speech(count: int) -> None:
    values, n, _ = assemble([(2, PAUSE), (count * WINDOW / RATE, SPEECH), (2, PAUSE)])
    assert split(values, n) == []


def test_speech_starts_at_threshold_and_trails_off_above_threshold_less_margin() -> None:
    # 0.4 alone is never speech; after speech it is (a voice trailing off); 0.3 is a pause.
    pieces = [(1, 0.4), (2, SPEECH), (1, 0.4), (1, 0.3), (2, SPEECH), (1, PAUSE), (1, 0.4)]
    values, n, _ = assemble(pieces)
    at = starts(pieces)
    assert split(values, n, max_seconds=4) == [
        Span(at[1] - PAD, at[3] + PAD),
        Span(at[4] - PAD, at[5] + PAD),
    ]


def test_threshold_is_the_probability_speech_needs() -> None:
    pieces = [(1, PAUSE), (3, 0.6), (1, PAUSE), (3, SPEECH), (1, PAUSE)]
    values, n, _ = assemble(pieces)
    assert len(split(values, n, chunking=Chunking.server_vad(threshold=0.5))) == 2
    [loud] = split(values, n, chunking=Chunking.server_vad(threshold=0.8))
    assert loud.start == starts(pieces)[3] - round(0.3 * RATE)
    assert split(values, n, chunking=Chunking.server_vad(threshold=1.0)) == []
    [everything] = split(values, n, chunking=Chunking.server_vad(threshold=0.0))
    assert everything == Span(0, n)


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_long_conversation_is_cut_in_pauses(seed: int) -> None:
    values, n, bursts = conversation(seed, 150, (4, 12))
    spans = split(values, n)
    check_spans(spans, n, 30)
    check_bursts(spans, bursts)
    assert 5 <= len(spans) <= 10  # joined greedily: mostly 15-30 s each


def test_max_seconds_is_honoured() -> None:
    values, n, bursts = conversation(20, 60, (2, 5))
    spans = split(values, n, max_seconds=10)
    check_spans(spans, n, 10)
    check_bursts(spans, bursts)
    assert len(spans) >= 6


def test_continuous_speech_is_cut_where_speech_is_least_sure() -> None:
    values, n, _ = assemble([(70, SPEECH)])
    dips = [(windows(22), windows(22.3)), (windows(45), windows(45.3))]
    for start, end in dips:
        values[start:end] = 0.6  # still speech, but the best place to cut
        values[start + 3] = 0.55
    spans = split(values, n)
    check_spans(spans, n, 30)
    assert spans[0].start == 0
    assert spans[-1].end == n
    assert len(spans) == 3
    for (start, _), (left, right) in zip(dips, itertools.pairwise(spans), strict=True):
        assert left.end == right.start  # nothing lost at a forced cut
        assert left.end == (start + 3) * WINDOW


def test_continuous_speech_with_small_max() -> None:
    values, n, _ = assemble([(25, SPEECH)])
    spans = split(values, n, max_seconds=10)
    check_spans(spans, n, 10)
    assert spans[0].start == 0
    assert spans[-1].end == n
    assert all(left.end == right.start for left, right in itertools.pairwise(spans))


def test_short_pause_does_not_split_a_short_clip() -> None:
    values, n, bursts = assemble([(0.3, PAUSE), (2, SPEECH), (0.2, PAUSE), (2, SPEECH)])
    [span] = split(values, n)
    assert span.start <= bursts[0][0]
    assert span.end == n


def test_breaths_are_not_pauses() -> None:
    # Each window's later half holds only 200 ms breaths; its one real pause comes early.
    # Were breaths pauses, the cut would land in one of them.
    pieces: list[Piece] = [(0.5, PAUSE)]
    for _ in range(4):
        pieces += [(3, SPEECH), (0.8, PAUSE)]
        for seconds in (3, 3, 2.5):
            pieces += [(seconds, SPEECH), (0.2, 0.1)]
        pieces[-1] = (0.8, PAUSE)
    values, n, _ = assemble(pieces)
    at = starts(pieces)
    breaths = [(at[i], at[i + 1]) for i, (_, level) in enumerate(pieces) if level == 0.1]
    spans = split(values, n, max_seconds=10)
    check_spans(spans, n, 10)
    for start, end in breaths:
        assert all(not start <= edge <= end for span in spans for edge in (span.start, span.end))


def test_long_silence_ends_a_span() -> None:
    values, n, bursts = assemble([(5, SPEECH), (4, PAUSE), (5, SPEECH), (25, PAUSE)])
    spans = split(values, n)
    assert len(spans) == 2
    check_bursts(spans, bursts)
    assert spans[0].end == bursts[0][1] + PAD
    assert spans[1].start == bursts[1][0] - PAD


def test_every_pause_of_silence_duration_ends_a_piece() -> None:
    """OpenAI's server_vad chunking: pieces end at each pause of `silence_duration_ms`, start
    `prefix_padding_ms` before their speech, and still never outgrow the window."""
    values, n, bursts = assemble(
        [(1, PAUSE), (3, SPEECH), (0.6, PAUSE), (3, SPEECH), (0.4, PAUSE), (40, SPEECH)]
    )
    spans = split(values, n, chunking=Chunking.server_vad(silence_duration_ms=500))
    check_spans(spans, n, 30)
    assert len(spans) == 3  # the 0.4 s pause is bridged; the 43.4 s of speech is cut once
    assert spans[0].start == bursts[0][0] - round(0.3 * RATE)
    assert spans[1].end > bursts[2][0]
    coarse = split(values, n, chunking=Chunking.server_vad(silence_duration_ms=1000))
    check_spans(coarse, n, 30)
    assert coarse[0].start == spans[0].start
    assert coarse[0].end > bursts[1][1]  # no pause of 1 s: the first two sentences together


def test_speech_touching_both_ends() -> None:
    values, n, _ = assemble([(5, SPEECH)])
    assert split(values, n) == [Span(0, n)]
    values, n, _ = assemble([(3, SPEECH), (1, PAUSE), (30, SPEECH), (1, PAUSE), (20, SPEECH)])
    spans = split(values, n)
    check_spans(spans, n, 30)
    assert spans[0].start == 0
    assert spans[-1].end == n


def test_a_partial_last_window_counts() -> None:
    """The recording need not be a whole number of windows; spans never pass its end."""
    values, n, _ = assemble([(1, PAUSE), (1, SPEECH)])
    [span] = split(values, n - 100)
    assert span.end == n - 100


def test_tiny_inputs() -> None:
    assert split(np.zeros(0, dtype=np.float32), 0) == []
    assert split(np.full(1, SPEECH, dtype=np.float32), 80) == []  # shorter than speech


def test_bad_arguments() -> None:
    values, n, _ = assemble([(1, SPEECH)])
    with pytest.raises(ValueError, match="positive"):
        split(values, n, max_seconds=0)
    with pytest.raises(ValueError, match="positive"):
        split(values, n, max_seconds=float("inf"))
    with pytest.raises(ValueError, match="one per window"):
        split(values, n + WINDOW)
    with pytest.raises(ValueError, match="one per window"):
        split(values[None], n)
    with pytest.raises(ValueError, match="window"):
        split(values, n, max_seconds=0.01)


def test_three_hours_split_without_trouble() -> None:
    values = np.full(windows(3 * 3600), PAUSE, dtype=np.float32)
    bursts = []
    for minute in range(0, 180, 20):
        start = windows(minute * 60)
        values[start : start + windows(4)] = SPEECH
        bursts.append((start * WINDOW, (start + windows(4)) * WINDOW))
    spans = split(values, len(values) * WINDOW)
    assert len(spans) == len(bursts)
    check_bursts(spans, bursts)


# --- is_silent: frame energy against an absolute floor ----------------------------------

FRAME = round(FRAME_SECONDS * RATE)
Samples = npt.NDArray[np.int16]


def noise(rng: np.random.Generator, seconds: float, dbfs: float) -> Samples:
    scale = 32768 * 10 ** (dbfs / 20)
    values = rng.standard_normal(round(seconds * RATE)) * scale
    return np.clip(values, -32768, 32767).astype(np.int16)


def silence(seconds: float) -> Samples:
    return np.zeros(round(seconds * RATE), dtype=np.int16)


@pytest.mark.parametrize(
    "signal",
    [
        silence(5),
        noise(np.random.default_rng(2), 5, -60),
        noise(np.random.default_rng(3), 90, -62),
        np.concatenate([silence(40), noise(np.random.default_rng(4), 40, -60)]),
        np.concatenate([silence(2), noise(np.random.default_rng(5), 0.05, -10), silence(2)]),
        np.zeros(0, dtype=np.int16),
        noise(np.random.default_rng(60), 0.005, -10),
    ],
    ids=["digital", "hiss", "long-hiss", "silence-then-hiss", "click", "empty", "tiny"],
)
def test_silence_faint_noise_and_clicks_are_silent(signal: Samples) -> None:
    assert is_silent(signal)


@pytest.mark.parametrize("dbfs", [-50, -30, -10])
def test_anything_above_the_floor_is_worth_sending(dbfs: float) -> None:
    assert not is_silent(np.concatenate([silence(3), noise(np.random.default_rng(7), 1, dbfs)]))


def test_loud_frames_count_together_wherever_they_fall() -> None:
    """is_silent looks one second at a time and stops once it heard enough; frames heard in
    different looks add up, as if it had judged the whole recording at once."""
    rng = np.random.default_rng(6)
    burst = noise(rng, 3 * FRAME / RATE, -10)  # 3 frames: less than speech's 5
    one_side = np.concatenate([silence(0.94), burst, silence(3)])  # frames 47-49: one look
    assert is_silent(one_side)
    astride = np.concatenate([silence(0.94), burst, silence(1), burst, silence(2)])
    assert not is_silent(astride)  # 3 in the first second, 3 more in the third
