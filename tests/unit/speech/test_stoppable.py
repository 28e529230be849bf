"""Work in a thread that stops with its request: told to stop, it ends before the request's
cancellation goes on, and its slot among `--decode-workers` is held until then."""

from __future__ import annotations

import asyncio
import io
import threading

import numpy as np
import pytest

from qwen3_asr_server.speech import audio, planning, stoppable
from qwen3_asr_server.speech.audio import RATE
from qwen3_asr_server.speech.silero import SpeechModel
from qwen3_asr_server.speech.stoppable import Stop, Stopped
from tests.fixtures.containers import encode
from tests.fixtures.speech import noise_only


def stopped() -> Stop:
    stop = Stop()
    stop.set()
    return stop


async def test_a_cancelled_request_waits_for_its_thread_to_stop_and_keeps_the_slot() -> None:
    slots = asyncio.Semaphore(1)
    started, ended = threading.Event(), threading.Event()

    def job(stop: Stop) -> None:
        started.set()
        try:
            while True:
                stop.check()
                threading.Event().wait(0.005)
        finally:
            ended.set()

    task = asyncio.create_task(stoppable.run(slots, job))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()  # cancelled again while it waits for the thread: still waits
    assert slots.locked()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended.is_set()  # the thread was over before the cancellation reached the caller
    assert not slots.locked()


async def test_an_uncancelled_job_gives_its_result_and_its_error() -> None:
    slots = asyncio.Semaphore(1)
    assert await stoppable.run(slots, lambda stop: 42) == 42

    def fails(stop: Stop) -> None:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        await stoppable.run(slots, fails)
    assert not slots.locked()


def test_decoding_stops_at_the_first_frame_once_told() -> None:
    clip = encode(noise_only(20, -30, "white"), RATE, "mp3")
    assert audio.decode(io.BytesIO(clip), 60, Stop()).duration == pytest.approx(20, abs=0.1)
    with pytest.raises(Stopped):
        audio.decode(io.BytesIO(clip), 60, stopped())


def test_silero_and_the_planner_stop_once_told() -> None:
    model = SpeechModel()
    samples = noise_only(60, -30, "white")
    with pytest.raises(Stopped):
        model.recording(samples, stopped())
    with pytest.raises(Stopped):
        planning.split(samples, model, stop=stopped())
    assert planning.split(np.zeros(0, dtype=np.int16), model, stop=stopped()) == []
