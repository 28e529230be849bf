"""Overload: a bounded number of requests reach vLLM, a bounded line waits, the rest get 429."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.fixtures import metrics
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.standin import StandIn

CLIP = wav(1.0)


async def _transcribe(harness: Harness) -> httpx.Response:
    return await harness.http.post("/v1/audio/transcriptions", files={"file": ("a.wav", CLIP)})


def _metric(text: str, name: str) -> float:
    return metrics.value(text, name, 0.0)


async def test_a_flood_gets_answers_or_429s_never_5xx() -> None:
    standin = StandIn(MODEL, delay=0.5)
    async with app_before(standin, max_concurrent=2, max_queue=3, queue_timeout=10) as harness:
        flood = [asyncio.ensure_future(_transcribe(harness)) for _ in range(10)]
        await asyncio.sleep(0.2)
        health = await harness.http.get("/health")  # answered while the flood is stuck
        assert health.status_code == 200
        assert not any(task.done() and task.result().status_code == 200 for task in flood)
        responses = await asyncio.gather(*flood)
        statuses = sorted(response.status_code for response in responses)
        assert statuses == [200] * 5 + [429] * 5  # 2 in flight + 3 waiting; 5 turned away
        assert standin.max_in_flight == 2
        for response in responses:
            if response.status_code == 429:
                assert response.headers["retry-after"] == "1"
                error = response.json()["error"]
                assert set(error) == {"message", "type", "param", "code"}
                assert error["code"] == "rate_limit_exceeded"
        scraped = (await harness.http.get("/metrics")).text
        assert _metric(scraped, 'qwen3_asr_rejected_total{reason="queue_full"}') == 5
        assert _metric(scraped, "qwen3_asr_upstream_in_flight") == 0
        assert _metric(scraped, "qwen3_asr_queue_depth") == 0


async def test_waiting_too_long_is_a_429() -> None:
    async with app_before(
        StandIn(MODEL, delay=1.0), max_concurrent=1, queue_timeout=0.2
    ) as harness:
        first, second = await asyncio.gather(_transcribe(harness), _transcribe(harness))
        assert sorted([first.status_code, second.status_code]) == [200, 429]
        scraped = (await harness.http.get("/metrics")).text
        assert _metric(scraped, 'qwen3_asr_rejected_total{reason="queue_timeout"}') == 1


@pytest.mark.parametrize("failure", ["upstream error", "dead stream", "client gone"])
async def test_slots_come_back_after_every_kind_of_ending(failure: str) -> None:
    standin = StandIn(MODEL, fail_after=4 if failure == "dead stream" else None, piece_delay=0.05)
    async with app_before(standin, max_concurrent=1, queue_timeout=2) as harness:
        for _ in range(3):
            if failure == "upstream error":
                harness.supervisor.upstream_model = "not-served"
                response = await _transcribe(harness)
                assert response.status_code == 502
                harness.supervisor.upstream_model = MODEL
            elif failure == "dead stream":
                response = await harness.http.post(
                    "/v1/audio/transcriptions",
                    files={"file": ("a.wav", CLIP)},
                    data={"stream": "true"},
                )
                assert '"error"' in response.text
            else:
                async with harness.http.stream(
                    "POST",
                    "/v1/audio/transcriptions",
                    files={"file": ("a.wav", CLIP)},
                    data={"stream": "true"},
                ) as response:
                    async for _ in response.aiter_lines():
                        break
        await asyncio.sleep(0.5)
        scraped = (await harness.http.get("/metrics")).text
        assert _metric(scraped, "qwen3_asr_upstream_in_flight") == 0
        assert (await _transcribe(harness)).status_code == 200
