"""Live streams' Silero windows scored together (`speech.scoring`): the probabilities and events
each stream gets are those it gets alone, however many streams share a batch and however their
chunks fall; and streams that hear at once share batches."""

from __future__ import annotations

import asyncio

import numpy as np
import numpy.typing as npt

from qwen3_asr_server.speech.scoring import Batches, Probabilities, State, Windows, scored
from qwen3_asr_server.speech.silero import CONTEXT, WINDOW, SpeechModel
from qwen3_asr_server.speech.vad import SpeechDetector, VadEvent
from tests.fixtures.speech import scene

MODEL = SpeechModel()
RATE = 16_000
Samples = npt.NDArray[np.int16]


def rows(samples: Samples) -> Windows:
    """A stream's windows as the detector makes them: context, then window, scaled."""
    whole = len(samples) // WINDOW
    if not whole:
        return np.zeros((0, CONTEXT + WINDOW), dtype=np.float32)
    scaled = np.concatenate([np.zeros(CONTEXT), samples / 32768]).astype(np.float32)
    view = np.lib.stride_tricks.sliding_window_view(scaled, CONTEXT + WINDOW)[::WINDOW]
    return np.ascontiguousarray(view[:whole])


def streams() -> list[Samples]:
    """Real speech at different levels and in noise, cut to different lengths."""
    found = []
    for index, (level, snr) in enumerate([(-20.0, None), (-35.0, None), (-20.0, 10.0)] * 3):
        samples = scene(level_dbfs=level, snr_db=snr, lead=0.5 + index / 10).samples
        found.append(samples[: len(samples) - index * 3 * WINDOW])
    return found


def test_streams_side_by_side_get_what_each_gets_alone() -> None:
    heard = streams()
    windows = [rows(samples) for samples in heard] + [rows(heard[0][:0])]  # one with none
    states = [MODEL.initial_state() for _ in windows]
    together = scored(MODEL.step, windows, states)
    assert len(together) == len(windows)
    for each, state, (probabilities, after) in zip(windows, states, together, strict=True):
        alone, alone_after = MODEL.probabilities(each, state)
        assert len(probabilities) == len(each)
        np.testing.assert_allclose(probabilities, alone, atol=1e-5)
        np.testing.assert_allclose(after, alone_after, atol=1e-5)
        assert after.shape == (2, 1, 128)


class Counted:
    """The model's step, counting the rows of each batch it runs."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, windows: Windows, state: State) -> tuple[Probabilities, State]:
        self.sizes.append(len(windows))
        return MODEL.step(windows, state)


def events_alone(samples: Samples, chunk: int) -> list[VadEvent]:
    detector = SpeechDetector(MODEL)
    found: list[VadEvent] = []
    for at in range(0, len(samples), chunk):
        found += detector.feed(samples[at : at + chunk])
    return found


async def test_sessions_hearing_at_once_share_batches_and_keep_their_own_events() -> None:
    """64 streams appending 100 ms at a time at once, each over its own detector: the events
    each gets are those it gets alone, and the model ran far fewer batches than windows."""
    model = SpeechModel()
    counted = Counted()
    model._batches = Batches(counted)  # the same network, its batches counted
    heard = [samples for _ in range(7) for samples in streams()][:64]
    chunks = [1600 + 160 * (index % 5) for index in range(len(heard))]  # 100-140 ms appends

    async def session(samples: Samples, chunk: int) -> list[VadEvent]:
        detector = SpeechDetector(model)
        found: list[VadEvent] = []
        for at in range(0, len(samples), chunk):
            found += await detector.hear(samples[at : at + chunk])
            await asyncio.sleep(0)  # the next append, as a socket's next message comes
        return found

    together = await asyncio.gather(*map(session, heard, chunks))
    for samples, chunk, found in zip(heard, chunks, together, strict=True):
        assert found == events_alone(samples, chunk)
        assert found  # each heard its speech
    windows = sum(len(samples) // WINDOW for samples in heard)
    assert sum(counted.sizes) == windows
    assert max(counted.sizes) > 16
    assert len(counted.sizes) < windows / 8


async def test_a_stream_alone_waits_only_for_its_own_windows() -> None:
    model = SpeechModel()
    counted = Counted()
    model._batches = Batches(counted)
    samples = scene().samples
    detector = SpeechDetector(model)
    found: list[VadEvent] = []
    for at in range(0, len(samples), 1600):
        found += await detector.hear(samples[at : at + 1600])
    assert found == events_alone(samples, 1600)
    assert set(counted.sizes) == {1}  # nobody else's windows to wait for
    state = model.initial_state()
    nothing, after = await model.score(rows(samples[: WINDOW - 1]), state)  # short of a window
    assert nothing == []
    assert after is state
    assert len(counted.sizes) == len(samples) // WINDOW


def test_a_model_outlives_the_event_loop_its_batch_ran_for() -> None:
    """A loop that ends with a batch in flight (a server stopped mid-append) leaves the model
    to serve the next loop's streams."""
    model = SpeechModel()
    samples = scene().samples

    async def abandoned() -> None:
        hearing = asyncio.create_task(SpeechDetector(model).hear(samples))
        await asyncio.sleep(0)  # its batch handed to the thread; the loop ends with it
        assert not hearing.done()

    asyncio.run(abandoned())

    async def heard() -> list[VadEvent]:
        return await asyncio.wait_for(SpeechDetector(model).hear(samples), 30)

    assert asyncio.run(heard()) == events_alone(samples, len(samples))
