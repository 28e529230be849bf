"""The diarizer's pure parts: where windows go, how labels become turns and regions, the
clustering, the naming of known speakers."""

from __future__ import annotations

import numpy as np
import pytest

from qwen3_asr_server.speakers import clustering, features
from qwen3_asr_server.speakers.count import SpeakerCount
from qwen3_asr_server.speakers.diarize import (
    HOP,
    SHORTEST,
    WINDOW,
    Known,
    Voices,
    labels,
    regions,
    windows,
)
from qwen3_asr_server.speakers.diarize import turns as turns_of
from qwen3_asr_server.speech.segmentation import Span
from qwen3_asr_server.speech.silero import WINDOW as VAD_WINDOW


def test_windows_cover_each_run_of_speech() -> None:
    long = Span(1000, 1000 + 3 * WINDOW + 123)
    found = windows([Span(0, SHORTEST - 1), Span(500, 500 + WINDOW - 10), long])
    assert found[0] == Span(500, 500 + WINDOW - 10)  # a short run: one window of its own
    rest = found[1:]
    assert {span.end - span.start for span in rest} == {WINDOW}
    assert [span.start for span in rest[:-1]] == list(range(1000, long.end - WINDOW + 1, HOP))
    assert rest[-1].end == long.end  # the last ends with the run


def test_a_turn_changes_halfway_between_the_windows_that_disagree() -> None:
    run = Span(0, 4 * HOP + WINDOW)
    spans = windows([run])
    names = ["A", "A", "B", "B", "B"]
    found = turns_of([run], spans, names)
    change = ((spans[1].start + spans[1].end) // 2 + (spans[2].start + spans[2].end) // 2) // 2
    assert found == [Span(0, change, "A"), Span(change, run.end, "B")]


def test_a_run_too_short_for_a_window_takes_the_nearest_voice() -> None:
    speech = [Span(0, WINDOW), Span(10 * WINDOW, 10 * WINDOW + 100), Span(20 * WINDOW, 21 * WINDOW)]
    spans = windows(speech)
    assert len(spans) == 2
    found = turns_of(speech, spans, ["A", "B"])
    assert [turn.speaker for turn in found] == ["A", "A", "B"]


def test_regions_cover_the_recording_one_speaker_each() -> None:
    found = regions(
        [Span(1000, 20000, "A"), Span(30000, 50000, "A"), Span(60000, 80000, "B")], 100_000
    )
    assert [region.speaker for region in found] == ["A", "B"]
    assert found[0].start == 0
    assert found[-1].end == 100_000
    assert found[0].end == found[1].start
    assert found[0].end % VAD_WINDOW == 0
    assert 50000 <= found[0].end <= 60000


def voices(speakers: int, each: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit embeddings around `speakers` random voices (windows of one voice ~0.8 alike, of
    two ~0), in turns of 4 windows: 0, 1, 2, ..., then again."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((speakers, 192))
    truth = np.tile(np.repeat(np.arange(speakers), 4), each // 4)
    points = centres[truth] + 0.5 * rng.standard_normal((len(truth), 192))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32), truth


@pytest.mark.parametrize("speakers", [1, 2, 3, 4, 6])
def test_clustering_finds_how_many_speak(speakers: int) -> None:
    points, truth = voices(speakers, 40)
    found = clustering.cluster(points)
    assert found.max() + 1 == speakers
    # the same partition, labelled in order of first appearance
    pairs = set(zip(truth.tolist(), found.tolist(), strict=True))
    assert len(pairs) == speakers
    assert found[0] == 0


def test_long_recordings_are_clustered_in_blocks_then_joined() -> None:
    points, truth = voices(3, 120)
    whole = clustering.cluster(points)
    assert clustering.cluster(points, block=100).tolist() == whole.tolist() == truth.tolist()


def test_few_windows_are_clustered_too() -> None:
    points, truth = voices(2, 8)
    assert clustering.cluster(points[:6]).tolist() == truth[:6].tolist()
    assert clustering.cluster(points[:1]).tolist() == [0]
    assert clustering.cluster(points[:0]).tolist() == []


def test_known_speakers_are_named_by_their_best_match() -> None:
    points, truth = voices(3, 12)
    found = clustering.cluster(points)
    assert found.tolist() == truth.tolist()
    means = clustering.centroids(points, found)
    known = [
        Known("zoe", 0.9 * means[2] + 0.1 * means[0]),  # named out of order
        Known("yan", means[0]),
        Known("nobody", -means[1]),  # alike to no one: not used
    ]
    assert labels(means, known) == ["yan", "A", "zoe"]


def test_unnamed_speakers_are_lettered_in_order() -> None:
    means = np.eye(3, dtype=np.float32)
    assert labels(means, []) == ["A", "B", "C"]
    assert labels(means, [Known("b", means[1])]) == ["A", "b", "B"]


def test_the_filterbank_has_one_row_per_frame() -> None:
    samples = (np.random.default_rng(0).standard_normal(16000) * 3000).astype(np.int16)
    found = features.fbank(samples)
    assert found.shape == (features.frames(16000), features.BINS) == (98, 80)
    assert np.isfinite(found).all()
    assert features.fbank(samples[:100]).shape == (0, 80)


@pytest.mark.parametrize(("speakers", "windows"), [(2, 40), (4, 40), (2, 4), (4, 4)])
def test_a_count_given_is_how_many_are_found(speakers: int, windows: int) -> None:
    points, _ = voices(3, windows)  # three voices, many windows or few (under MIN_SPECTRAL)
    found = clustering.cluster(points, count=SpeakerCount(speakers, speakers))
    assert found.max() + 1 == speakers
    assert found[0] == 0


@pytest.mark.parametrize("windows", [40, 4])
def test_a_range_clamps_what_the_voices_say(windows: int) -> None:
    points, truth = voices(4, windows)
    assert clustering.cluster(points, count=SpeakerCount(1, 2)).max() + 1 == 2
    assert clustering.cluster(points, count=SpeakerCount(2, 6)).tolist() == truth.tolist()
    one, _ = voices(1, windows)
    assert clustering.cluster(one, count=SpeakerCount(3, 5)).max() + 1 == 3


def test_a_count_over_the_windows_is_one_speaker_a_window() -> None:
    points, _ = voices(2, 4)
    assert clustering.cluster(points[:3], count=SpeakerCount(5, 5)).tolist() == [0, 1, 2]


def test_long_recordings_keep_the_count_across_blocks() -> None:
    points, truth = voices(3, 120)
    found = clustering.cluster(points, block=100, count=SpeakerCount(2, 2))
    assert found.max() + 1 == 2
    assert clustering.cluster(points, block=100, count=SpeakerCount(3, 8)).tolist() == (
        truth.tolist()
    )


def test_a_sessions_voices_stop_opening_at_its_cap() -> None:
    points, truth = voices(3, 4)
    capped, free = Voices(most=2), Voices()
    assert [free.label(points[truth == who]) for who in range(3)] == ["A", "B", "C"]
    assert [capped.label(points[truth == who]) for who in range(3)][:2] == ["A", "B"]
    assert capped.last in ("A", "B")
