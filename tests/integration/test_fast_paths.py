"""The shortcuts the performance work took, checked for what they do (never for speed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from qwen3_asr_server import audio
from tests.conftest import MODEL, Harness, app_before
from tests.fixtures.audio import wav
from tests.fixtures.containers import encode, speech_like
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
    stereo = encode(speech_like([(2.0, True)], rate=44100, channels=2), 44100, "wav")
    opened = _counting(monkeypatch, audio.av, "open")
    threads = _counting(monkeypatch, asyncio, "to_thread")
    response = await harness.http.post(
        "/v1/audio/transcriptions", files={"file": ("clip.wav", wav(2.0))}
    )
    assert response.json()["text"] == "Hello world."
    assert response.json()["usage"]["seconds"] == 2.0
    assert (opened, threads) == ([], [])
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
    await harness.http.post(
        "/v1/audio/transcriptions", files={"file": ("long.wav", wav(40.0))}
    )  # 1.25 MB: too long to copy in the event loop
    assert (len(opened), len(threads)) == (0, 1)
    assert sum(request["audio"]["seconds"] for request in harness.standin.requests) == 40.0


async def test_connections_to_vllm_are_kept_alive_one_per_slot() -> None:
    # More slots than httpx keeps alive by default (20): none may be closed after its answer
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
