"""What a Batches client may send that once stalled, looped or confused the server: an input
file past OpenAI's 50,000 requests, a line nested deeper than the store can write, and a
batch cancelled by many clients at once. Each ends as OpenAI's API says it does."""

from __future__ import annotations

import asyncio
import json
import time

from openai.types import Batch

from qwen3_asr_server.entrypoints.jobs.shapes import MAX_LINES, TRANSCRIPTIONS
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_batches import _jsonl


async def _create(harness: Harness, text: bytes) -> Batch:
    source = await harness.sdk.files.create(file=("in.jsonl", text), purpose="batch")
    return await harness.sdk.batches.create(
        input_file_id=source.id,
        endpoint=TRANSCRIPTIONS,  # type: ignore[arg-type]
        completion_window="24h",
    )


async def _leaves(harness: Harness, batch_id: str, status: str, seconds: float = 20) -> Batch:
    """The batch once it is no longer in `status` (it must leave it within `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        batch = await harness.sdk.batches.retrieve(batch_id)
        if batch.status != status:
            return batch
        assert time.monotonic() < deadline, batch
        await asyncio.sleep(0.1)


async def test_an_input_file_past_the_cap_fails_at_the_first_line_past_it() -> None:
    """Reading stops at line 50,001: the lines after it (junk here) are never read, and the
    batch's one error says where the cap was passed."""
    line = {"method": "POST", "url": TRANSCRIPTIONS, "body": {"file": "file-x"}}
    text = b"".join(
        json.dumps({"custom_id": str(i), **line}).encode() + b"\n" for i in range(MAX_LINES + 1)
    )
    async with app_before(StandIn(MODEL)) as harness:
        created = await _create(harness, text + b"not json\n" * 200)
        batch = await _leaves(harness, created.id, "validating", seconds=60)
        assert batch.status == "failed", batch
        assert batch.errors is not None
        errors = [(e.code, e.line) for e in batch.errors.data]
        assert errors == [("too_many_requests", MAX_LINES + 1)], errors[:3]


async def test_a_line_nested_too_deep_fails_its_batch_instead_of_looping() -> None:
    """1,000 levels: orjson reads it, the store's encoder could not write it."""
    deep = b'{"x":' + b"[" * 999 + b"]" * 999 + b"}"
    line = b'{"custom_id":"deep","method":"POST","url":"%s","body":%s}\n' % (
        TRANSCRIPTIONS.encode(),
        deep,
    )
    async with app_before(StandIn(MODEL)) as harness:
        created = await _create(harness, line)
        batch = await _leaves(harness, created.id, "validating")
        assert batch.status == "failed", batch
        assert batch.errors is not None
        [error] = batch.errors.data
        assert (error.code, error.line, error.param) == ("invalid_request", 1, "body")
        assert "deeper than" in (error.message or "")


async def test_ten_cancels_at_once_all_answer_the_cancelling_batch() -> None:
    """As OpenAI's cancel is: asked again (or by ten clients at once) it is answered with the
    batch, never a 409 for the status it had a moment before."""
    async with app_before(StandIn(MODEL, delay=0.5)) as harness:
        clip = await harness.sdk.files.create(file=("a.wav", wav(0.5)), purpose="user_data")
        lines = [
            {"custom_id": str(i), "method": "POST", "url": TRANSCRIPTIONS,
             "body": {"file": clip.id}}
            for i in range(20)
        ]  # fmt: skip
        created = await _create(harness, _jsonl(lines))
        running = await _leaves(harness, created.id, "validating")
        assert running.status == "in_progress", running
        answers = await asyncio.gather(
            *(harness.http.post(f"/v1/batches/{created.id}/cancel") for _ in range(10))
        )
        assert [answer.status_code for answer in answers] == [200] * 10, [
            answer.text for answer in answers
        ]
        for answer in answers:
            batch = Batch.model_validate(answer.json())
            assert (batch.id, batch.status) in {
                (created.id, "cancelling"),
                (created.id, "cancelled"),
            }
        ended = await _leaves(harness, created.id, "cancelling")
        assert ended.status == "cancelled", ended
