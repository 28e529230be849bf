"""`Audio.wav`, the WAV every piece goes to vLLM in: what any WAV reader reads back; and the
decoded frames of a WebRTC call, resampled as they come."""

from __future__ import annotations

import io
import wave

import av
import numpy as np

from qwen3_asr_server.speech.audio import RATE, Audio, FrameResampler, plain_wav


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


def test_decoded_frames_of_any_layout_and_rate_become_16_khz_mono() -> None:
    """A WebRTC call's Opus decodes to 48 kHz stereo frames of 20 ms: a second of a 1 kHz
    tone comes out as a second of it at 16 kHz."""
    resample = FrameResampler()
    times = np.arange(48_000) / 48_000
    tone = (np.sin(2 * np.pi * 1000 * times) * 10_000).astype(np.int16)
    stereo = np.repeat(tone, 2)  # packed s16: left, right, left, ...
    out = []
    for start in range(0, 48_000, 960):
        frame = av.AudioFrame.from_ndarray(
            stereo[start * 2 : (start + 960) * 2].reshape(1, -1), format="s16", layout="stereo"
        )
        frame.sample_rate = 48_000
        frame.pts = start
        out.append(resample(frame))
    samples = np.concatenate(out)
    assert samples.dtype == np.int16
    assert abs(len(samples) - RATE) < 100  # what the resampler holds back at the end
    spectrum = np.abs(np.fft.rfft(samples[: RATE // 2]))
    assert np.argmax(spectrum) * 2 == 1000  # bins of 2 Hz over half a second
