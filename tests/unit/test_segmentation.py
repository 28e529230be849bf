from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt
import pytest

from qwen3_asr_server.segmentation import (
    FRAME_SECONDS,
    PAD_SECONDS,
    Span,
    is_silent,
    split,
)

RATE = 16_000
FRAME = round(FRAME_SECONDS * RATE)
PAD = round(PAD_SECONDS * RATE)

Samples = npt.NDArray[np.int16]
Bursts = list[tuple[int, int]]


def noise(rng: np.random.Generator, seconds: float, dbfs: float) -> Samples:
    """Gaussian noise at an RMS level in dBFS: a stand-in for speech or for room hiss."""
    scale = 32768 * 10 ** (dbfs / 20)
    values = rng.standard_normal(round(seconds * RATE)) * scale
    return np.clip(values, -32768, 32767).astype(np.int16)


def phrase(rng: np.random.Generator, seconds: float) -> Samples:
    """Speech-like: -20 dBFS noise whose loudness swings with a syllable rhythm."""
    t = np.arange(round(seconds * RATE)) / RATE
    envelope = 0.3 + 0.7 * np.abs(np.sin(np.pi * 4 * t))
    return (noise(rng, seconds, -20) * envelope).astype(np.int16)


def silence(seconds: float) -> Samples:
    return np.zeros(round(seconds * RATE), dtype=np.int16)


def assemble(pieces: list[tuple[str, Samples]]) -> tuple[Samples, Bursts]:
    """Join pieces; return the signal and where its speech pieces lie."""
    bursts: Bursts = []
    offset = 0
    for kind, piece in pieces:
        if kind == "speech":
            bursts.append((offset, offset + len(piece)))
        offset += len(piece)
    return np.concatenate([piece for _, piece in pieces]), bursts


def conversation(
    seed: int, seconds: float, phrase_range: tuple[float, float]
) -> tuple[Samples, Bursts]:
    """Phrases separated by 0.5-1.5 s pauses, alternately digital silence and faint hiss."""
    rng = np.random.default_rng(seed)
    pieces: list[tuple[str, Samples]] = [("pause", silence(0.4))]
    total = 0.4
    while total < seconds:
        length = float(rng.uniform(*phrase_range))
        gap = float(rng.uniform(0.5, 1.5))
        hush = silence(gap) if len(pieces) % 4 == 1 else noise(rng, gap, -60)
        pieces += [("speech", phrase(rng, length)), ("pause", hush)]
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
    rng = np.random.default_rng(1)
    signal, [(start, end)] = assemble(
        [("pause", silence(0.5)), ("speech", phrase(rng, 1.0)), ("pause", silence(0.5))]
    )
    [span] = split(signal, RATE)
    assert start - PAD - FRAME <= span.start <= start - PAD + FRAME
    assert end + PAD - FRAME <= span.end <= end + PAD + FRAME
    assert span.seconds(RATE) == (span.start / RATE, span.end / RATE)
    assert not is_silent(signal)


@pytest.mark.parametrize(
    "signal",
    [
        silence(5),
        noise(np.random.default_rng(2), 5, -60),
        noise(np.random.default_rng(3), 90, -62),
        np.concatenate([silence(40), noise(np.random.default_rng(4), 40, -60)]),
    ],
    ids=["digital", "hiss", "long-hiss", "silence-then-hiss"],
)
def test_silence_and_faint_noise_give_nothing(signal: Samples) -> None:
    assert split(signal, RATE) == []
    assert is_silent(signal)


def test_lone_click_is_not_speech() -> None:
    rng = np.random.default_rng(5)
    signal = np.concatenate([silence(2), noise(rng, 0.05, -10), silence(2)])
    assert split(signal, RATE) == []
    assert is_silent(signal)


def test_loud_frames_count_together_wherever_they_fall() -> None:
    """is_silent looks one second at a time and stops once it heard enough; frames heard in
    different looks add up, as if it had judged the whole recording at once."""
    rng = np.random.default_rng(6)
    burst = noise(rng, 3 * FRAME / RATE, -10)  # 3 frames: less than speech's 5
    one_side = np.concatenate([silence(0.94), burst, silence(3)])  # frames 47-49: one look
    assert is_silent(one_side)
    astride = np.concatenate([silence(0.94), burst, silence(1), burst, silence(2)])
    assert not is_silent(astride)  # 3 in the first second, 3 more in the third
    assert split(astride, RATE) == []  # still not speech to cut: two clicks


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_long_conversation_is_cut_in_pauses(seed: int) -> None:
    signal, bursts = conversation(seed, 150, (4, 12))
    spans = split(signal, RATE)
    check_spans(spans, len(signal), 30)
    check_bursts(spans, bursts)
    assert 5 <= len(spans) <= 10  # joined greedily: mostly 15-30 s each


def test_max_seconds_is_honoured() -> None:
    signal, bursts = conversation(20, 60, (2, 5))
    spans = split(signal, RATE, max_seconds=10)
    check_spans(spans, len(signal), 10)
    check_bursts(spans, bursts)
    assert len(spans) >= 6


def test_continuous_speech_is_cut_at_its_quietest() -> None:
    rng = np.random.default_rng(30)
    signal = noise(rng, 70, -20)
    dips = [(22 * RATE, round(22.3 * RATE)), (45 * RATE, round(45.3 * RATE))]
    for start, end in dips:
        signal[start:end] //= 2  # 6 dB quieter: still speech, but the best place to cut
    spans = split(signal, RATE)
    check_spans(spans, len(signal), 30)
    assert spans[0].start == 0
    assert spans[-1].end == len(signal)
    assert len(spans) == 3
    for (start, end), (left, right) in zip(dips, itertools.pairwise(spans), strict=True):
        assert left.end == right.start  # nothing lost at a forced cut
        assert start <= left.end <= end


def test_continuous_speech_with_small_max() -> None:
    signal = noise(np.random.default_rng(31), 25, -20)
    spans = split(signal, RATE, max_seconds=10)
    check_spans(spans, len(signal), 10)
    assert spans[0].start == 0
    assert spans[-1].end == len(signal)
    assert all(left.end == right.start for left, right in itertools.pairwise(spans))


def test_short_pause_does_not_split_a_short_clip() -> None:
    rng = np.random.default_rng(40)
    signal, bursts = assemble(
        [
            ("pause", silence(0.3)),
            ("speech", phrase(rng, 2)),
            ("pause", silence(0.2)),
            ("speech", phrase(rng, 2)),
            ("pause", silence(0.3)),
        ]
    )
    [span] = split(signal, RATE)
    assert span.start <= bursts[0][0]
    assert span.end >= bursts[1][1]


def test_breaths_are_not_pauses() -> None:
    # Each window's later half holds only 200 ms breaths; its one real pause comes early.
    # Were breaths pauses, the cut would land in one of them.
    rng = np.random.default_rng(41)
    pieces: list[tuple[str, Samples]] = [("pause", silence(0.5))]
    for _ in range(4):
        pieces += [("speech", phrase(rng, 3)), ("pause", noise(rng, 0.8, -60))]
        for seconds in (3, 3, 2.5):
            pieces += [("speech", phrase(rng, seconds)), ("breath", silence(0.2))]
        pieces[-1] = ("pause", silence(0.8))
    signal, _ = assemble(pieces)
    breaths, offset = [], 0
    for kind, piece in pieces:
        if kind == "breath":
            breaths.append((offset, offset + len(piece)))
        offset += len(piece)
    spans = split(signal, RATE, max_seconds=10)
    check_spans(spans, len(signal), 10)
    for start, end in breaths:
        assert all(not start <= edge <= end for span in spans for edge in (span.start, span.end))


def test_quiet_speaker_beside_a_loud_one_is_kept() -> None:
    rng = np.random.default_rng(43)
    signal, bursts = assemble(
        [
            ("pause", silence(1)),
            ("speech", noise(rng, 20, -12)),
            ("pause", silence(1)),
            ("speech", noise(rng, 8, -36)),  # 24 dB quieter
            ("pause", silence(1)),
            ("speech", noise(rng, 20, -12)),
            ("pause", silence(1)),
        ]
    )
    spans = split(signal, RATE)
    check_spans(spans, len(signal), 30)
    check_bursts(spans, bursts)


def test_noisy_room_is_still_cut_in_pauses() -> None:
    # Hiss at -40 dBFS sits above the floor, so pauses count as speech; the forced cut at
    # the quietest frame must still find them.
    rng = np.random.default_rng(44)
    pieces: list[tuple[str, Samples]] = [("pause", noise(rng, 0.5, -40))]
    while sum(len(piece) for _, piece in pieces) < 90 * RATE:
        length, gap = float(rng.uniform(4, 10)), float(rng.uniform(0.5, 1.2))
        pieces += [("speech", phrase(rng, length)), ("pause", noise(rng, gap, -40))]
    signal, bursts = assemble(pieces)
    spans = split(signal, RATE)
    check_spans(spans, len(signal), 30)
    check_bursts(spans, bursts)


def test_long_silence_ends_a_span() -> None:
    rng = np.random.default_rng(42)
    signal, bursts = assemble(
        [
            ("speech", phrase(rng, 5)),
            ("pause", silence(4)),
            ("speech", phrase(rng, 5)),
            ("pause", silence(25)),
        ]
    )
    spans = split(signal, RATE)
    assert len(spans) == 2
    check_bursts(spans, bursts)
    assert spans[0].end == bursts[0][1] + PAD
    assert spans[1].start == bursts[1][0] - PAD


def test_speech_touching_both_ends() -> None:
    rng = np.random.default_rng(50)
    clip = phrase(rng, 5)
    assert split(clip, RATE) == [Span(0, len(clip))]
    signal, _ = conversation(51, 50, (4, 8))
    signal = np.concatenate([phrase(rng, 3), signal[round(0.4 * RATE) :], phrase(rng, 3)])
    spans = split(signal, RATE)
    check_spans(spans, len(signal), 30)
    assert spans[0].start == 0
    assert spans[-1].end == len(signal)


def test_tiny_inputs() -> None:
    assert split(np.zeros(0, dtype=np.int16), RATE) == []
    assert is_silent(np.zeros(0, dtype=np.int16))
    loud = noise(np.random.default_rng(60), 0.005, -10)
    assert len(loud) < FRAME
    assert split(loud, RATE) == []
    assert is_silent(loud)


def test_bad_arguments() -> None:
    clip = silence(1)
    with pytest.raises(ValueError, match="positive"):
        split(clip, RATE, max_seconds=0)
    with pytest.raises(ValueError, match="positive"):
        split(clip, RATE, max_seconds=float("inf"))
    with pytest.raises(ValueError, match="one-dimensional"):
        split(np.zeros((2, 100), dtype=np.int16), RATE)
    with pytest.raises(ValueError, match="frame"):
        split(clip, RATE, max_seconds=0.01)


def test_three_hours_split_without_trouble() -> None:
    rng = np.random.default_rng(70)
    signal = np.zeros(3 * 3600 * RATE, dtype=np.int16)
    bursts = []
    for minute in range(0, 180, 20):
        start = minute * 60 * RATE
        signal[start : start + 4 * RATE] = phrase(rng, 4)
        bursts.append((start, start + 4 * RATE))
    spans = split(signal, RATE)
    assert len(spans) == len(bursts)
    check_bursts(spans, bursts)
    assert not is_silent(signal)
