"""`Audio.wav`, the WAV every piece goes to vLLM in: what any WAV reader reads back."""

from __future__ import annotations

import io
import wave

import numpy as np

from qwen3_asr_server.speech.audio import RATE, Audio, plain_wav


def test_a_wav_reads_back_as_the_samples_it_was_made_of() -> None:
    samples = np.random.default_rng(1).integers(-32768, 32767, RATE, dtype=np.int16)
    audio = Audio(samples)
    for start, end in [(0, None), (100, 4100), (RATE - 1, RATE), (7, 7)]:
        data = audio.wav(start, end)
        with wave.open(io.BytesIO(data), "rb") as read:
            assert (read.getnchannels(), read.getsampwidth(), read.getframerate()) == (1, 2, RATE)
            frames = read.readframes(read.getnframes())
        assert np.array_equal(np.frombuffer(frames, "<i2"), samples[start:end])
        if start == end:
            continue  # an empty WAV is not audio to the server's reader
        again = plain_wav(io.BytesIO(data), max_seconds=60)  # the server's own reader
        assert again is not None
        assert np.array_equal(again.samples, samples[start:end])
