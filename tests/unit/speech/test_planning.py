"""The cheap planner: frame energy proposes the pauses, Silero hears only those it cuts at."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from qwen3_asr_server.speech import planning, segmentation
from qwen3_asr_server.speech.audio import RATE
from qwen3_asr_server.speech.segmentation import Span
from qwen3_asr_server.speech.silero import WINDOW, Probabilities, SpeechModel
from qwen3_asr_server.speech.stoppable import Stop
from tests.fixtures.speech import scene

MARGIN = round(0.05 * RATE)  # an edge this close to a sentence's end is not inside it
MODEL = SpeechModel()


class Counting(SpeechModel):
    """The shared model, counting the windows it is asked to judge region by region."""

    def __init__(self) -> None:
        super().__init__()
        self.windows = 0

    def regions(
        self,
        samples: npt.NDArray[np.int16],
        regions: Sequence[tuple[int, int]],
        stop: Stop | None = None,
    ) -> list[Probabilities]:
        self.windows += sum(end - start for start, end in regions)
        return super().regions(samples, regions, stop)


def edges(spans: list[Span]) -> list[int]:
    return [span.start for span in spans[1:]] + [span.end for span in spans[:-1]]


def test_levels_are_dbfs_per_silero_window() -> None:
    tone = (np.sin(np.arange(3 * WINDOW) * 0.1) * 32767).astype(np.int16)
    silence = np.zeros(WINDOW + 1, dtype=np.int16)
    found = planning.levels(np.concatenate([tone, silence]))
    assert len(found) == 5  # the last, one sample long, padded with silence
    np.testing.assert_allclose(found[:3], -3.0, atol=0.1)  # a full-scale sine: half the power
    assert found[3] < -100
    assert found[4] < -100


def test_quiet_stretches_near_the_floor_bridge_clicks_and_drop_short_ones() -> None:
    level = np.full(400, -20.0, dtype=np.float32)
    level[50:100] = -60  # a pause of 50 windows
    level[74] = -20  # with a one-window click inside it
    level[200:205] = -60  # too short
    level[300:340] = -58  # a pause a little above the floor
    starts, ends = planning.quiet(level, min_windows=10)
    assert starts.tolist() == [50, 300]
    assert ends.tolist() == [100, 340]
    level[:3] = level[-2:] = -60  # short, but at the ends: what a piece is trimmed of
    starts, ends = planning.quiet(level, min_windows=10)
    assert starts.tolist() == [0, 50, 300, 398]
    assert ends.tolist() == [3, 100, 340, 400]


@pytest.mark.parametrize("snr_db", [None, 20, 10])
def test_cuts_fall_in_pauses_and_silero_hears_a_small_part(snr_db: float | None) -> None:
    recording = scene(snr_db=snr_db, repeats=12)
    samples = recording.samples
    counting = Counting()
    spans = planning.split(samples, counting)
    assert len(spans) >= 4
    assert all(span.end - span.start <= 30 * RATE for span in spans)
    for start, end in recording.sentences:
        assert sum(span.start <= start + MARGIN and end - MARGIN <= span.end for span in spans) == 1
        assert not any(start + MARGIN < edge < end - MARGIN for edge in edges(spans))
    assert counting.windows < 0.3 * len(samples) / WINDOW


def test_speech_without_pauses_is_cut_where_silero_is_least_sure() -> None:
    """No quiet stretch to propose: a window's later half is heard whole, as `split` cuts."""
    recording = scene(pause=0.0, lead=0.0, trail=0.0, repeats=8)
    samples = recording.samples
    spans = planning.split(samples, MODEL)
    whole = segmentation.split(MODEL.recording(samples), len(samples), 30.0)
    assert len(spans) == len(whole) >= 2
    assert spans[0].start == 0
    assert spans[-1].end == len(samples)
    assert all(span.end - span.start <= 30 * RATE for span in spans)


def test_empty_and_silent_recordings_give_no_piece() -> None:
    assert planning.split(np.zeros(0, dtype=np.int16), MODEL) == []
    assert planning.split(np.zeros(60 * RATE, dtype=np.int16), MODEL) == []
