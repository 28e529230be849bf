"""The Realtime VAD (Silero) on real speech: two espeak-ng sentences in noise, quiet, chunked."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from qwen3_asr_server.speech.vad import (
    WINDOW,
    SpeechDetector,
    SpeechModel,
    SpeechStarted,
    SpeechStopped,
    VadEvent,
)
from tests.fixtures.speech import noise_only, scene

RATE = 16_000
PREFIX = round(0.3 * RATE)
SILENCE = round(0.5 * RATE)
TOLERANCE = round(0.3 * RATE)  # how far a found sentence edge may lie from the truth

Samples = npt.NDArray[np.int16]
MODEL = SpeechModel()


def silence(seconds: float) -> Samples:
    return np.zeros(round(seconds * RATE), dtype=np.int16)


def detector(**options: Any) -> SpeechDetector:
    return SpeechDetector(MODEL, **options)


def feed_all(vad: SpeechDetector, audio: Samples, sizes: Iterable[int]) -> list[VadEvent]:
    """Feed audio in chunks of the given sizes (the rest in one go); all events in order."""
    events: list[VadEvent] = []
    offset = 0
    for size in sizes:
        if offset >= len(audio):
            break
        events += vad.feed(audio[offset : offset + size])
        offset += size
    return events + vad.feed(audio[offset:])


def detect(audio: Samples, **options: Any) -> list[VadEvent]:
    return detector(**options).feed(audio)


def utterances(events: list[VadEvent]) -> list[tuple[SpeechStarted, SpeechStopped]]:
    """(start, stop) pairs, checking that events alternate start, stop, start, ..."""
    starts = [event for event in events[::2] if isinstance(event, SpeechStarted)]
    stops = [event for event in events[1::2] if isinstance(event, SpeechStopped)]
    assert len(starts) == len(stops) == len(events) / 2
    return list(zip(starts, stops, strict=True))


@pytest.mark.parametrize("kind", ["pink", "white"])
@pytest.mark.parametrize("snr_db", [None, 30, 20, 10, 5])
def test_both_sentence_ends_are_found_in_noise(kind: str, snr_db: float | None) -> None:
    room = scene(snr_db=snr_db, noise_kind=kind)
    pairs = utterances(detect(room.samples))
    assert len(pairs) == 2
    for (start, stop), (first, last) in zip(pairs, room.sentences, strict=True):
        assert abs(start.sample - first) <= TOLERANCE
        assert abs(stop.sample - last) <= TOLERANCE
        assert stop.audio_end - stop.sample >= SILENCE - WINDOW  # the silence it waited for


def test_a_quiet_talker_is_heard() -> None:
    quiet = scene(level_dbfs=-45.0)
    pairs = utterances(detect(quiet.samples))
    assert len(pairs) == 2
    for (start, stop), (first, last) in zip(pairs, quiet.sentences, strict=True):
        assert abs(start.sample - first) <= TOLERANCE
        assert abs(stop.sample - last) <= TOLERANCE


@pytest.mark.parametrize(
    ("kind", "level"), [("pink", -40.0), ("white", -30.0), ("pink", -60.0), ("white", -20.0)]
)
def test_noise_alone_is_never_speech(kind: str, level: float) -> None:
    vad = detector()
    assert feed_all(vad, noise_only(30.0, level, kind), [1_600] * 1_000) == []
    assert not vad.speaking
    assert detect(silence(10.0)) == []


@pytest.mark.parametrize("seed", range(3))
def test_chunking_does_not_change_events(seed: int) -> None:
    audio = scene(snr_db=15, repeats=2).samples
    whole = detect(audio)
    assert len(whole) == 8
    rng = np.random.default_rng(seed)
    sizes = rng.choice([0, 1, 7, 319, 480, 511, 512, 513, 1600, 4000], size=10_000)
    assert feed_all(detector(), audio, sizes.tolist()) == whole


def test_one_sample_chunks_give_the_same_events() -> None:
    audio = scene(pause=0.8, lead=0.3, trail=0.8).samples
    whole = detect(audio)
    assert len(whole) == 4
    assert feed_all(detector(), audio, [1] * len(audio)) == whole


def test_sessions_share_the_model_not_their_state() -> None:
    one, two = scene(snr_db=20).samples, scene(snr_db=10, noise_kind="white", pause=2.0).samples
    alone = (detect(one), detect(two))
    first, second = detector(), detector()
    events: tuple[list[VadEvent], list[VadEvent]] = ([], [])
    for at in range(0, max(len(one), len(two)), 480):  # interleaved, as two live sessions
        events[0].extend(first.feed(one[at : at + 480]))
        events[1].extend(second.feed(two[at : at + 480]))
    assert events == alone


@pytest.mark.parametrize(
    ("pause", "silence_ms", "count"),
    [(0.3, 500, 1), (1.2, 500, 2), (1.2, 1_500, 1), (0.8, 1_000, 1), (0.8, 600, 2)],
)
def test_pauses_shorter_than_silence_are_bridged(pause: float, silence_ms: int, count: int) -> None:
    audio = scene(pause=pause, trail=2.0).samples
    assert len(utterances(detect(audio, silence_ms=silence_ms))) == count


def test_a_higher_threshold_never_hears_more() -> None:
    audio = scene(snr_db=5).samples
    heard = []
    for threshold in np.linspace(0.1, 0.95, 8):
        vad = detector(threshold=threshold)
        pairs = utterances(vad.feed(audio) + vad.flush())
        heard.append(sum(stop.sample - start.sample for start, stop in pairs))
    assert heard == sorted(heard, reverse=True)
    assert heard[0] > 0


def test_stop_waits_for_the_whole_silence_and_flush_ends_speech() -> None:
    room = scene(lead=0.5)
    first_end = room.sentences[0][1]
    vad = detector()
    events = vad.feed(room.samples[: first_end + SILENCE - 2 * WINDOW])
    assert len(events) == 1
    assert isinstance(events[0], SpeechStarted)
    assert vad.speaking
    [stop] = vad.flush()
    assert isinstance(stop, SpeechStopped)
    assert abs(stop.sample - first_end) <= TOLERANCE
    assert stop.audio_end == (first_end + SILENCE - 2 * WINDOW) // WINDOW * WINDOW
    assert not vad.speaking
    assert vad.current is None
    assert vad.flush() == []
    assert vad.feed(silence(2.0)) == []


def test_speech_longer_than_30_s_is_cut_and_resumes() -> None:
    talk = scene(pause=0.25, repeats=6)  # ~43 s of speech, its pauses shorter than silence
    limit = 30 * RATE
    pairs = utterances(feed_all(detector(), talk.samples, [1_000] * 10_000))
    assert len(pairs) == 2
    (start, cut), (resumed, stop) = pairs
    assert abs(start.sample - talk.sentences[0][0]) <= TOLERANCE
    assert limit - WINDOW < cut.audio_end - start.audio_start <= limit
    assert cut.audio_end == resumed.sample == resumed.audio_start  # no audio lost or sent twice
    assert abs(stop.sample - talk.sentences[-1][1]) <= TOLERANCE


def test_events_alternate_and_keep_from_follows_the_stream() -> None:
    audio = scene(snr_db=20, repeats=4, pause=0.9).samples
    vad = detector(max_speech_ms=3_000)
    rng = np.random.default_rng(12)
    events: list[VadEvent] = []
    position, kept = 0, 0
    while position < len(audio):
        size = int(rng.integers(1, 3_000))
        new = vad.feed(audio[position : position + size])
        position += size
        for event in new:  # no event reaches back before audio the caller may have dropped
            assert event.sample >= kept
            if isinstance(event, SpeechStarted):
                assert event.audio_start >= kept
        if new:
            assert vad.speaking == isinstance(new[-1], SpeechStarted)
        assert vad.keep_from >= kept
        kept = vad.keep_from
        events += new
    pairs = utterances(events + vad.flush())
    assert len(pairs) >= 8
    assert len(set(events)) == len(events)
    for start, stop in pairs:
        assert start.audio_start <= start.sample < stop.sample <= stop.audio_end
        assert stop.audio_end - start.audio_start <= 3 * RATE
    for (_, stop), (start, _) in itertools.pairwise(pairs):
        assert stop.audio_end <= start.audio_start


def test_memory_stays_constant() -> None:
    vad = detector()
    audio = scene(snr_db=20, repeats=8).samples
    sizes = set()
    for first in range(0, len(audio), 1_601):
        vad.feed(audio[first : first + 1_601])
        sizes.add(tuple(v.size for v in vars(vad).values() if isinstance(v, np.ndarray)))
    assert all(max(size) < WINDOW for size in sizes)  # the state, the context, a partial window


def test_bad_input_and_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="mono"):
        detector().feed(np.zeros((320, 2), dtype=np.int16))
    with pytest.raises(ValueError, match="int16"):
        detector().feed(np.zeros(320, dtype=np.float32))
    for bad in (-0.01, 1.5, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            detector(threshold=bad)
    with pytest.raises(ValueError, match="max_speech_ms"):
        detector(prefix_ms=300, max_speech_ms=400)
    with pytest.raises(ValueError, match="16 kHz"):
        detector(rate=8_000)
