"""The shortcuts the performance work took, checked for what they do (never for speed)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import av
import numpy as np
import pytest

from qwen3_asr_server.speech import audio
from tests.fixtures.audio import wav
from tests.fixtures.containers import encode
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.speech import speech_wav, spoken
from tests.fixtures.standin import StandIn


def _counting(monkeypatch: pytest.MonkeyPatch, target: Any, name: str) -> list[object]:
    """Replace `target.name` by a wrapper that records its calls."""
    calls: list[object] = []
    original: Callable[..., Any] = getattr(target, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, counted)
    return calls


async def test_a_plain_16khz_mono_wav_is_neither_decoded_nor_sent_to_a_thread(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    stereo = encode(spoken([(2.0, True)], rate=44100, channels=2), 44100, "wav")
    opened = _counting(monkeypatch, audio.av, "open")
    threads = _counting(monkeypatch, asyncio, "to_thread")
    worker_threads = _counting(monkeypatch, anyio.to_thread, "run_sync")  # FastAPI's, Starlette's
    response = await harness.http.post(
        "/v1/audio/transcriptions", files={"file": ("clip.wav", wav(2.0))}
    )
    assert response.json()["text"] == "Hello world."
    assert response.json()["usage"]["seconds"] == 2.0
    assert (opened, threads, worker_threads) == ([], [], [])
    # What is not plain 16 kHz mono 16-bit PCM still goes through PyAV, in a thread
    response = await harness.http.post("/v1/audio/transcriptions", files={"file": ("s", stereo)})
    assert response.json()["text"] == "Hello world."
    assert len(opened) == len(threads) == 1
    sent = harness.standin.requests[-1]["audio"]
    assert (sent["rate"], sent["channels"], sent["seconds"]) == (16000, 1, 2.0)


async def test_a_long_plain_wav_is_read_as_is_in_a_thread(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _counting(monkeypatch, audio.av, "open")
    threads = _counting(monkeypatch, asyncio, "to_thread")
    talk = speech_wav(40.0)  # 1.25 MB: too long to copy in the event loop
    await harness.http.post("/v1/audio/transcriptions", files={"file": ("long.wav", talk)})
    # one thread reads it, one listens for the pauses to cut it at (Silero); no PyAV
    assert (len(opened), len(threads)) == (0, 2)
    heard = sum(request["audio"]["seconds"] for request in harness.standin.requests)
    assert heard == pytest.approx(40.0, abs=0.3)


async def test_connections_to_vllm_are_kept_alive_one_per_slot() -> None:
    # More slots than a client pool keeps alive by default (httpx: 20): none may be closed
    # after its answer
    slots = 24
    standin = StandIn(MODEL, delay=0.3)
    async with app_before(standin, max_concurrent=slots) as harness:

        async def wave() -> None:
            upload = {"file": ("a.wav", wav(1.0))}
            await asyncio.gather(
                *(harness.http.post("/v1/audio/transcriptions", files=upload) for _ in range(slots))
            )

        await wave()
        await wave()
        for _ in range(3):
            await harness.http.post("/v1/audio/transcriptions", files={"file": ("a", wav(1.0))})
    assert standin.max_in_flight == slots
    assert len(standin.requests) == 2 * slots + 3
    assert len({request["connection"] for request in standin.requests}) == slots


_AudioResampler = av.AudioResampler


class _CountingResampler:
    """av.AudioResampler, counting the calls that carry audio."""

    calls = 0

    def __init__(self, **kwargs: Any) -> None:
        self._resampler = _AudioResampler(**kwargs)

    def resample(self, frame: av.AudioFrame | None) -> list[av.AudioFrame]:
        _CountingResampler.calls += frame is not None
        return self._resampler.resample(frame)


async def test_compressed_audio_is_resampled_in_blocks_not_frame_by_frame(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audio.av, "AudioResampler", _CountingResampler)
    monkeypatch.setattr(_CountingResampler, "calls", 0)
    mp3 = encode(spoken([(4.0, True), (1.0, False)] * 6), 16000, "mp3")  # 30 s
    frames = sum(1 for _ in av.open(io.BytesIO(mp3)).decode(audio=0))
    response = await harness.http.post("/v1/audio/transcriptions", files={"file": ("a", mp3)})
    assert response.json()["usage"]["seconds"] == pytest.approx(30.0, abs=0.1)
    assert frames > 800  # 576 samples each
    assert 0 < _CountingResampler.calls <= 30 * 16000 // audio._Pcm.BLOCK + 1


def _frame_by_frame(data: bytes) -> np.ndarray:
    """The reference: every decoded frame through the resampler on its own, a new resampler
    whenever the source's format, layout or rate changes."""
    out: list[np.ndarray] = []
    resampler, source = None, None
    for frame in av.open(io.BytesIO(data)).decode(audio=0):
        shape = (frame.format.name, frame.layout.name, frame.sample_rate)
        if shape != source:
            if resampler is not None:
                out += [f.to_ndarray()[0] for f in resampler.resample(None)]
            resampler, source = av.AudioResampler(format="s16", layout="mono", rate=16000), shape
        out += [f.to_ndarray()[0] for f in resampler.resample(frame)]
    assert resampler is not None
    out += [f.to_ndarray()[0] for f in resampler.resample(None)]
    return np.concatenate(out)


@pytest.mark.parametrize(
    "data",
    [
        encode(spoken([(3.0, True)], rate=48000, channels=2), 48000, "opus"),
        encode(spoken([(3.0, True)], rate=44100), 44100, "m4a"),
        # MP3s joined end to end: the rate changes twice on the way
        b"".join(
            encode(spoken([(1.5, True)], rate=rate), rate, "mpeg") for rate in (44100, 16000, 44100)
        ),
    ],
    ids=["opus-48k-stereo", "m4a-44k", "mp3-44k-16k-44k"],
)
def test_block_resampling_gives_the_samples_frame_by_frame_resampling_gives(data: bytes) -> None:
    decoded = audio.decode(io.BytesIO(data), max_seconds=60).samples
    np.testing.assert_array_equal(decoded, _frame_by_frame(data))
