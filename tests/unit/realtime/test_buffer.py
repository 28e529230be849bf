"""The Realtime input buffer: audio addressed by stream position, however much was dropped."""

from __future__ import annotations

import numpy as np

from qwen3_asr_server.entrypoints.realtime.buffer import AudioBuffer


def chunk(start: int, end: int) -> np.ndarray:
    return np.arange(start, end, dtype=np.int16)


def test_positions_count_from_the_start_of_the_stream() -> None:
    buffer = AudioBuffer()
    buffer.append(chunk(0, 100))
    buffer.append(chunk(100, 250))
    assert buffer.heard == 250
    assert buffer.samples(90, 110).tolist() == list(range(90, 110))
    buffer.trim(200)
    assert buffer.held_bytes == 50 * 2
    assert buffer.samples(210, 250).tolist() == list(range(210, 250))
    # before what is held: from the oldest sample held
    assert buffer.samples(0, 205).tolist() == list(range(200, 205))
    buffer.append(chunk(250, 300))
    assert buffer.heard == 300
    assert buffer.samples(240, 260).tolist() == list(range(240, 260))


def test_trim_never_drops_what_was_not_heard() -> None:
    buffer = AudioBuffer()
    buffer.append(chunk(0, 10))
    buffer.trim(50)  # past the stream's end: only what was heard goes
    assert buffer.held_bytes == 0
    buffer.append(chunk(10, 20))
    assert buffer.samples(10, 20).tolist() == list(range(10, 20))
    buffer.trim(5)  # already gone: nothing changes
    assert buffer.samples(10, 20).tolist() == list(range(10, 20))
