from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from qwen3_asr_server.realtime.vad import (
    SpeechDetector,
    SpeechStarted,
    SpeechStopped,
    VadEvent,
    threshold_dbfs,
)
from qwen3_asr_server.segmentation import FLOOR_DBFS, FRAME_SECONDS, MIN_SPEECH_SECONDS
from tests.fixtures.containers import speech_like

RATE = 16_000
FRAME = round(FRAME_SECONDS * RATE)
PREFIX = round(0.3 * RATE)
MIN_SPEECH = round(MIN_SPEECH_SECONDS * RATE)
SILENCE = round(0.5 * RATE)

Samples = npt.NDArray[np.int16]


def noise(rng: np.random.Generator, seconds: float, dbfs: float) -> Samples:
    """Gaussian noise at an RMS level in dBFS: a stand-in for speech or for room hiss."""
    values = rng.standard_normal(round(seconds * RATE)) * 32768 * 10 ** (dbfs / 20)
    return np.clip(values, -32768, 32767).astype(np.int16)


def silence(seconds: float) -> Samples:
    return np.zeros(round(seconds * RATE), dtype=np.int16)


def talk(pattern: list[tuple[float, bool]], dbfs: float = -20.0, seed: int = 0) -> Samples:
    """speech_like audio (voiced parts at -20 dBFS RMS) moved to another level, as int16."""
    audio = speech_like(pattern, rate=RATE, seed=seed) * 10 ** ((dbfs + 20) / 20)
    return np.round(audio * 32767).astype(np.int16)


def feed_all(detector: SpeechDetector, audio: Samples, sizes: Iterable[int]) -> list[VadEvent]:
    """Feed audio in chunks of the given sizes (the rest in one go); all events in order."""
    events: list[VadEvent] = []
    offset = 0
    for size in sizes:
        if offset >= len(audio):
            break
        events += detector.feed(audio[offset : offset + size])
        offset += size
    return events + detector.feed(audio[offset:])


def detect(audio: Samples, **options: Any) -> list[VadEvent]:
    return SpeechDetector(**options).feed(audio)


def conversation(seed: int, seconds: float) -> Samples:
    """Bursts of 0.05-3 s at -45..-10 dBFS, pauses of 0.1-2 s of silence or -60 dBFS hiss."""
    rng = np.random.default_rng(seed)
    pieces: list[Samples] = []
    total = 0.0
    while total < seconds:
        burst, pause = rng.uniform(0.05, 3.0), rng.uniform(0.1, 2.0)
        pieces.append(noise(rng, burst, rng.uniform(-45, -10)))
        pieces.append(noise(rng, pause, -60) if rng.random() < 0.5 else silence(pause))
        total += burst + pause
    return np.concatenate(pieces)


def utterances(events: list[VadEvent]) -> list[tuple[SpeechStarted, SpeechStopped]]:
    """(start, stop) pairs, checking that events alternate start, stop, start, ..."""
    starts = [event for event in events[::2] if isinstance(event, SpeechStarted)]
    stops = [event for event in events[1::2] if isinstance(event, SpeechStopped)]
    assert len(starts) == len(stops) == len(events) / 2
    return list(zip(starts, stops, strict=True))


def test_threshold_mapping_is_monotonic_and_keeps_the_floor() -> None:
    levels = [threshold_dbfs(t) for t in np.linspace(0.0, 1.0, 21)]
    assert levels[0] == FLOOR_DBFS
    assert all(low < high for low, high in itertools.pairwise(levels))
    assert -45.0 <= threshold_dbfs(0.5) <= -40.0
    for bad in (-0.01, 1.01, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            threshold_dbfs(bad)


def test_bursts_are_reported_where_they_lie() -> None:
    rng = np.random.default_rng(1)
    audio = np.concatenate(
        [silence(0.5), noise(rng, 1.0, -20), silence(1.0), noise(rng, 0.7, -30), silence(1.0)]
    )
    assert detect(audio) == [
        SpeechStarted(8_000, 8_000 - PREFIX),
        SpeechStopped(24_000, 24_000 + SILENCE),
        SpeechStarted(40_000, 40_000 - PREFIX),
        SpeechStopped(51_200, 51_200 + SILENCE),
    ]


def test_positions_between_frames_are_within_a_frame() -> None:
    rng = np.random.default_rng(2)
    audio = np.concatenate([silence(0.5)[:-123], noise(rng, 1.0, -20), silence(0.7)])
    start, stop = 8_000 - 123, 24_000 - 123
    [(found_start, found_stop)] = utterances(detect(audio))
    assert start - FRAME < found_start.sample <= start
    assert stop <= found_stop.sample < stop + FRAME


def test_start_is_dated_back_to_the_first_loud_frame() -> None:
    rng = np.random.default_rng(3)
    audio = np.concatenate([silence(1.0), noise(rng, 1.0, -20)])
    detector = SpeechDetector()
    arrivals = []
    for index in range(len(audio) // FRAME):
        chunk = audio[index * FRAME : (index + 1) * FRAME]
        arrivals += [(index, event) for event in detector.feed(chunk)]
    # Confirmed by the chunk that completes MIN_SPEECH of loudness, yet placed at its beginning.
    assert arrivals == [(50 + MIN_SPEECH // FRAME - 1, SpeechStarted(16_000, 16_000 - PREFIX))]
    assert detector.speaking
    assert detector.current == SpeechStarted(16_000, 16_000 - PREFIX)


@pytest.mark.parametrize("seed", range(5))
def test_chunking_does_not_change_events(seed: int) -> None:
    audio = conversation(seed, 40.0)
    whole = detect(audio)
    assert len(whole) >= 4
    rng = np.random.default_rng(seed)
    sizes = rng.choice([0, 1, 7, 319, 320, 321, 480, 1600, 1601, 4000], size=10_000)
    assert feed_all(SpeechDetector(), audio, sizes.tolist()) == whole


def test_one_sample_chunks_give_the_same_events() -> None:
    rng = np.random.default_rng(4)
    audio = np.concatenate([silence(0.3), noise(rng, 0.4, -25), silence(0.6)])
    whole = detect(audio)
    assert len(whole) == 2
    assert feed_all(SpeechDetector(), audio, [1] * len(audio)) == whole


def test_clicks_and_bursts_shorter_than_min_speech_start_nothing() -> None:
    rng = np.random.default_rng(5)
    clicks = silence(3.0)
    clicks[:: round(0.3 * RATE)] = 32767
    short = MIN_SPEECH - FRAME  # one frame short of speech, aligned to frames
    bursts = [np.concatenate([noise(rng, short / RATE, -10), silence(0.2)]) for _ in range(5)]
    assert detect(np.concatenate([clicks, *bursts])) == []
    assert len(detect(np.concatenate([noise(rng, MIN_SPEECH / RATE, -10), silence(1.0)]))) == 2


@pytest.mark.parametrize(
    ("pause", "silence_ms", "count"),
    [(0.3, 500, 1), (0.48, 500, 1), (0.5, 500, 2), (1.0, 500, 2), (0.3, 200, 2), (0.18, 200, 1)],
)
def test_pauses_shorter_than_silence_are_bridged(pause: float, silence_ms: int, count: int) -> None:
    rng = np.random.default_rng(6)
    audio = np.concatenate(
        [silence(0.2), noise(rng, 0.6, -20), silence(pause), noise(rng, 0.6, -20), silence(1.0)]
    )
    assert len(utterances(detect(audio, silence_ms=silence_ms))) == count


def test_speech_like_audio_gives_its_phrases() -> None:
    pattern = [(0.5, False), (2.0, True), (0.3, False), (1.5, True), (1.0, False), (1.0, True)]
    found = utterances(detect(talk([*pattern, (0.8, False)])))
    # Syllables swell from nothing, so edges may sit a few frames inside the voiced parts.
    expected = [(0.5, 4.3), (5.3, 6.3)]
    assert len(found) == len(expected)
    for (start, stop), (want_start, want_stop) in zip(found, expected, strict=True):
        assert abs(start.sample - want_start * RATE) <= 3 * FRAME
        assert abs(stop.sample - want_stop * RATE) <= 3 * FRAME


def test_stop_waits_for_the_whole_silence_and_flush_ends_speech() -> None:
    rng = np.random.default_rng(7)
    detector = SpeechDetector()
    audio = np.concatenate([silence(0.4), noise(rng, 0.5, -20), silence(0.49)])
    assert detector.feed(audio) == [SpeechStarted(6_400, 6_400 - PREFIX)]
    assert detector.speaking
    assert detector.flush() == [SpeechStopped(14_400, 22_240 // FRAME * FRAME)]
    assert not detector.speaking
    assert detector.current is None
    assert detector.flush() == []
    assert detector.feed(silence(2.0)) == []


def test_threshold_decides_whether_a_quiet_talker_is_heard() -> None:
    quiet = talk([(0.5, False), (2.0, True), (1.0, False)], dbfs=-45.0)
    assert len(utterances(detect(quiet, threshold=0.2))) == 1
    assert detect(quiet, threshold=0.9) == []
    rng = np.random.default_rng(8)
    for level in (-50.0, -45.0, -35.0, -30.0):
        audio = np.concatenate([noise(rng, 1.0, level), silence(1.0)])
        heard = [bool(detect(audio, threshold=t)) for t in np.linspace(0.0, 1.0, 11)]
        assert heard == sorted(heard, reverse=True)  # heard up to some threshold, then never
        assert heard[0]
        assert not heard[-1]


def test_digital_silence_and_faint_hiss_are_never_speech() -> None:
    rng = np.random.default_rng(9)
    for audio in (silence(60.0), noise(rng, 60.0, -60), noise(rng, 60.0, -57)):
        detector = SpeechDetector(threshold=0.0)
        assert feed_all(detector, audio, [1_600] * 1_000) == []
        assert not detector.speaking


def test_max_length_splits_continuous_speech_then_resumes() -> None:
    rng = np.random.default_rng(10)
    audio = np.concatenate([silence(1.0), noise(rng, 70.0, -20), silence(1.0)])
    limit = 30 * RATE
    events = feed_all(SpeechDetector(max_speech_ms=30_000), audio, [1_000] * 10_000)
    pairs = utterances(events)
    assert len(pairs) == 3
    assert pairs[0][0] == SpeechStarted(RATE, RATE - PREFIX)
    assert pairs[-1][1] == SpeechStopped(71 * RATE, 71 * RATE + SILENCE)
    lengths = [stop.audio_end - start.audio_start for start, stop in pairs]
    assert all(limit - FRAME < length <= limit for length in lengths[:-1])
    assert lengths[-1] <= limit
    for (_, stop), (start, _) in itertools.pairwise(pairs):  # cut, resumed at once, no overlap
        assert stop.sample == stop.audio_end == start.sample == start.audio_start


def test_max_length_reached_in_a_pause_waits_for_the_voice() -> None:
    rng = np.random.default_rng(11)
    audio = np.concatenate(
        [silence(0.5), noise(rng, 1.5, -20), silence(0.3), noise(rng, 1.2, -20), silence(1.0)]
    )
    events = detect(audio, max_speech_ms=2_000)
    # The utterance from 0.2 s would pass 2 s at 2.2 s, inside the pause: its speech ends with
    # the voice, its audio at the cut, and the next one's prefix reaches back no further.
    assert events == [
        SpeechStarted(8_000, 3_200),
        SpeechStopped(32_000, 35_200),
        SpeechStarted(36_800, 35_200),
        SpeechStopped(56_000, 56_000 + SILENCE),
    ]


def test_max_length_reached_as_the_voice_ends_leaves_no_empty_utterance() -> None:
    rng = np.random.default_rng(14)
    audio = np.concatenate([silence(0.5), noise(rng, 1.7, -20), silence(1.0)])
    assert detect(audio, max_speech_ms=2_000) == [
        SpeechStarted(8_000, 3_200),
        SpeechStopped(35_200, 35_200),
    ]


@pytest.mark.parametrize("seed", range(3))
def test_events_alternate_and_are_never_repeated(seed: int) -> None:
    detector = SpeechDetector(max_speech_ms=3_000)
    events = feed_all(detector, conversation(seed, 60.0), [2_400] * 1_000)
    events += detector.flush()
    pairs = utterances(events)
    assert len(pairs) >= 5
    assert len(set(events)) == len(events)
    for start, stop in pairs:  # each utterance's audio holds its speech, within the limit
        assert start.audio_start <= start.sample < stop.sample <= stop.audio_end
        assert stop.audio_end - start.audio_start <= 3 * RATE
    for (_, stop), (start, _) in itertools.pairwise(pairs):  # in order, audio never sent twice
        assert stop.audio_end <= start.audio_start
    assert detector.feed(silence(5.0)) == []
    assert detector.feed(silence(0.0)) == []
    assert detector.flush() == []


def test_state_and_keep_from_follow_the_stream() -> None:
    detector = SpeechDetector()
    audio = conversation(12, 60.0)
    rng = np.random.default_rng(12)
    position, kept, started = 0, 0, 0
    while position < len(audio):
        size = int(rng.integers(1, 3_000))
        events = detector.feed(audio[position : position + size])
        position += size
        for event in events:  # no event reaches back before audio the caller may have dropped
            assert event.sample >= kept
            if isinstance(event, SpeechStarted):
                assert event.audio_start >= kept
                started += 1
        if events:
            assert detector.speaking == isinstance(events[-1], SpeechStarted)
            assert detector.current == (events[-1] if detector.speaking else None)
        assert detector.keep_from >= kept
        kept = detector.keep_from
        if not detector.speaking:  # between utterances little audio needs keeping
            assert min(position, len(audio)) - kept <= PREFIX + MIN_SPEECH + FRAME
    assert started >= 5


def test_memory_stays_constant_over_ten_minutes() -> None:
    detector = SpeechDetector()
    events = 0
    for minute in range(10):
        audio = conversation(minute, 60.0)
        for first in range(0, len(audio), 1_601):
            events += len(detector.feed(audio[first : first + 1_601]))
            for value in vars(detector).values():  # only scalars and the partial frame
                if isinstance(value, np.ndarray):
                    assert value.size < FRAME
                else:
                    assert isinstance(value, (int, float, type(None), SpeechStarted))
    assert events >= 50


def test_bad_input_and_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="mono"):
        SpeechDetector().feed(np.zeros((320, 2), dtype=np.int16))
    with pytest.raises(ValueError, match="int16"):
        SpeechDetector().feed(np.zeros(320, dtype=np.float32))
    with pytest.raises(ValueError, match="threshold"):
        SpeechDetector(threshold=1.5)
    with pytest.raises(ValueError, match="max_speech_ms"):
        SpeechDetector(prefix_ms=300, max_speech_ms=400)
    with pytest.raises(ValueError, match="rate"):
        SpeechDetector(rate=0)
