"""The budget of decoded audio: reservations, their order, the 429, and the estimate made
before decoding; in one process, and for two workers sharing one table."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from qwen3_asr_server.capacity import budget
from qwen3_asr_server.capacity.budget import AudioBudget, LocalLedger, estimate
from qwen3_asr_server.capacity.shared import SharedLedger
from qwen3_asr_server.capacity.table import FILE_NAME, Table
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.observability.metrics import Metrics
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.audio import pcm_wav, wav


def local(limit: float, timeout: float = 5.0) -> AudioBudget:
    return AudioBudget(LocalLedger(), limit, timeout, Metrics())


async def test_requests_that_do_not_fit_wait_and_are_served_in_order() -> None:
    audio = local(10)
    first = await audio.reserve(6)
    served: list[str] = []

    async def request(name: str, seconds: float) -> None:
        held = await audio.reserve(seconds)
        served.append(name)
        held.release()

    waiting = [asyncio.create_task(request("a", 8)), asyncio.create_task(request("b", 1))]
    await asyncio.sleep(0.05)
    assert served == []  # b would fit, but a came first
    first.release()
    await asyncio.gather(*waiting)
    assert served == ["a", "b"]
    assert audio.ledger.total() == 0


async def test_no_room_within_the_timeout_is_a_429_with_retry_after() -> None:
    metrics = Metrics()
    audio = AudioBudget(LocalLedger(), 10, 0.05, metrics)
    await audio.reserve(10)
    with pytest.raises(APIError) as error:
        await audio.reserve(1)
    assert (error.value.status, error.value.code) == (429, "rate_limit_exceeded")
    assert error.value.headers == {"Retry-After": "1"}
    assert metrics.rejected.labels(reason="audio_budget")._value.get() == 1


async def test_a_reservation_is_corrected_to_what_was_decoded_and_given_back_once() -> None:
    metrics = Metrics()
    audio = AudioBudget(LocalLedger(), 100, 5, metrics)
    held = await audio.reserve(90)  # a guess from the upload's size
    held.resize(16000 * 30)  # what it decoded to
    assert metrics.audio_reserved._value.get() == 30
    second = await audio.reserve(70)  # fits now
    held.release()
    held.release()
    second.release()
    assert audio.ledger.total() == 0
    assert metrics.audio_reserved._value.get() == 0


async def test_a_client_that_leaves_while_waiting_holds_nothing() -> None:
    audio = local(10)
    first = await audio.reserve(10)
    waiting = asyncio.create_task(audio.reserve(5))
    await asyncio.sleep(0.02)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    first.release()
    assert audio.ledger.total() == 0
    (await audio.reserve(10)).release()  # the line moves on


async def test_two_workers_share_one_budget_and_one_line(tmp_path: Path) -> None:
    main = Table.create(tmp_path, workers=2)
    table = Table(tmp_path / FILE_NAME, workers=2)
    one = AudioBudget(SharedLedger(main, 0), 10, 5, Metrics())
    two = AudioBudget(SharedLedger(table, 1), 10, 5, Metrics())
    held = await one.reserve(8)
    late = asyncio.create_task(two.reserve(5))
    await asyncio.sleep(0.05)
    assert not late.done()
    with pytest.raises(TimeoutError):  # behind the other worker's first, though it would fit
        async with asyncio.timeout(0.05):
            await one.reserve(1)
    held.release()  # freed in one worker, found by the other within its poll
    (await late).release()
    assert main.audio() == 0
    main.forget(1)  # a worker that dies takes its reservations with it
    assert main.worker(1).audio == 0


def test_the_estimate_is_a_wav_s_length_and_channels_or_a_guess_from_the_size() -> None:
    upload = io.BytesIO(wav(2.0))
    seconds, channels = estimate(upload, len(upload.getvalue()), 100)
    assert channels == 1
    assert 2.0 <= seconds < 2.01
    assert upload.tell() == 0
    stereo = io.BytesIO(pcm_wav(bytes(2 * 2 * 32_000), channels=2))  # 2 s of silence
    seconds, channels = estimate(stereo, len(stereo.getvalue()), 100)
    assert channels == 2
    assert 2.0 <= seconds < 2.01
    compressed = io.BytesIO(b"\xff\xfb" + bytes(99_998))  # an MP3 of unknown length
    assert estimate(compressed, 100_000, 10_000) == (100_000 / budget.LOWEST_BITRATE, 0)
    assert estimate(compressed, 100_000_000, 10_000) == (10_000, 0)


def test_the_default_budget_is_a_quarter_of_the_memory_at_32_kib_a_second() -> None:
    assert budget.budget_seconds(Settings(model="m", audio_budget_seconds=60)) == 60
    expected = budget.memory_bytes() / 4 / 32768
    assert budget.budget_seconds(Settings(model="m")) == expected
