"""Silero over whole recordings, and the pieces uploads are cut into, on real speech: the
tests' espeak-ng sentences, clean, in noise, quiet, and none at all."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from qwen3_asr_server.speech.audio import RATE, Audio
from qwen3_asr_server.speech.onnx_models import Shared
from qwen3_asr_server.speech.segmentation import Span
from qwen3_asr_server.speech.silero import CONTEXT, MIN_CHUNK, WINDOW, SpeechModel
from qwen3_asr_server.transcription.pieces import Options, plan
from tests.fixtures.speech import noise_only, scene, spoken

MODEL = SpeechModel()
MARGIN = round(0.05 * RATE)  # an edge this close to a sentence's end is not inside it
Samples = npt.NDArray[np.int16]


def options(*, timed: bool = False, window: float = 30.0) -> Options:
    return Options(
        language=None,
        context=None,
        temperature=0.0,
        timed=timed,
        logprobs=False,
        window=window,
        concurrency=1,
    )


def pieces(samples: Samples, *, timed: bool = False) -> list[Span]:
    return plan(Audio(samples), options(timed=timed), lambda: MODEL)


def one_stream(samples: Samples) -> npt.NDArray[np.float32]:
    """Silero window by window as a Realtime session runs it, the last window padded."""
    padded = np.zeros(-(-len(samples) // WINDOW) * WINDOW + CONTEXT, dtype=np.float32)
    padded[CONTEXT : CONTEXT + len(samples)] = samples / np.float32(32768)
    rows = np.lib.stride_tricks.sliding_window_view(padded, CONTEXT + WINDOW)[::WINDOW]
    found, _ = MODEL.probabilities(rows, MODEL.initial_state())
    return np.array(found, dtype=np.float32)


def check_sentences_whole(spans: list[Span], sentences: list[tuple[int, int]]) -> None:
    """Every sentence lies in one span; no span edge falls inside a sentence."""
    for start, end in sentences:
        holders = [s for s in spans if s.start <= start + MARGIN and end - MARGIN <= s.end]
        assert len(holders) == 1, (start / RATE, end / RATE, spans)
        for span in spans:
            for edge in (span.start, span.end):
                assert not start + MARGIN < edge < end - MARGIN, (edge / RATE, start / RATE)


def test_a_recording_gets_one_probability_per_window() -> None:
    clip = scene().samples
    for length in (0, 1, WINDOW - 1, WINDOW, WINDOW + 1, len(clip)):
        assert len(MODEL.recording(clip[:length])) == -(-length // WINDOW)


def test_a_short_recording_is_judged_as_one_stream() -> None:
    clip = scene(snr_db=10).samples
    assert len(clip) // WINDOW < 2 * MIN_CHUNK
    np.testing.assert_array_equal(MODEL.recording(clip), one_stream(clip))


def test_side_by_side_streams_hear_what_one_stream_hears() -> None:
    """A long recording runs as several streams in one batch, each primed with the second
    before its chunk: speech is heard where one stream hears it, but for a window or two
    where the network is in two minds."""
    clip = scene(snr_db=10, repeats=10).samples
    batched, alone = MODEL.recording(clip), one_stream(clip)
    assert len(clip) // WINDOW >= 8 * MIN_CHUNK // 4
    disagree = np.count_nonzero((batched >= 0.5) != (alone >= 0.5))
    assert disagree <= 0.02 * len(alone)


@pytest.mark.parametrize(("kind", "snr_db"), [("pink", None), ("pink", 20), ("pink", 10),
                                              ("white", 10), ("pink", 5)])  # fmt: skip
def test_long_noisy_speech_is_cut_between_sentences(kind: str, snr_db: float | None) -> None:
    """What frame energy got wrong (a quarter of its cuts inside sentences at 20 and 10 dB):
    every piece edge in a pause, every sentence whole in one piece."""
    recording = scene(snr_db=snr_db, noise_kind=kind, repeats=12)
    spans = pieces(recording.samples)
    assert len(spans) >= 4  # about 110 s of speech: cut at least three times
    assert all(span.end - span.start <= 30 * RATE for span in spans)
    check_sentences_whole(spans, recording.sentences)


def test_a_quiet_talker_is_cut_like_a_loud_one() -> None:
    recording = scene(level_dbfs=-45, repeats=12)
    spans = pieces(recording.samples)
    assert len(spans) >= 4
    check_sentences_whole(spans, recording.sentences)


@pytest.mark.parametrize(("kind", "level"), [("pink", -40), ("white", -30)])
def test_noise_alone_gives_no_piece(kind: str, level: float) -> None:
    assert pieces(noise_only(60, level, kind)) == []
    assert pieces(noise_only(10, level, kind), timed=True) == []


def test_speech_longer_than_the_window_is_cut_into_pieces_that_keep_all_of_it() -> None:
    """45 s of talk, sentence after sentence without a breath between them."""
    voice = spoken([(0.5, False), (45, True), (0.5, False)])
    samples = np.round(voice * 32768).astype(np.int16)
    spans = pieces(samples)
    assert len(spans) == 2
    assert spans[0].end == spans[1].start  # nothing left out between them
    assert all(span.end - span.start <= 30 * RATE for span in spans)
    assert spans[0].start <= round(0.5 * RATE)
    assert spans[1].end >= round(45.2 * RATE)


def test_a_short_clip_that_needs_no_cut_is_never_judged_by_silero() -> None:
    """Short json/text requests take the whole clip, or nothing if it is silent: the model is
    not even loaded for them."""

    def refuse() -> SpeechModel:
        raise AssertionError("the short path loaded the VAD")

    clip = scene().samples
    assert plan(Audio(clip), options(), refuse) == [Span(0, len(clip))]
    assert plan(Audio(np.zeros(RATE, dtype=np.int16)), options(), refuse) == []


def test_the_shared_model_is_loaded_once() -> None:
    shared = Shared(SpeechModel)
    assert shared() is shared()
