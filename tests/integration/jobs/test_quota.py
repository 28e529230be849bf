"""What `--storage-quota-mb` holds against clients that try to pass it: uploads sent at once
(each fits alone, together they do not), and a batch whose outputs have no room left."""

from __future__ import annotations

import asyncio
from pathlib import Path

import openai
from openai.types import FileObject

from qwen3_asr_server.errors import MIB
from tests.fixtures.harness import MODEL, app_before
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_batches import _finished, _jsonl

ENDPOINT = "/v1/audio/transcriptions"


def _stored(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "jobs-data" / "files").iterdir())


async def test_uploads_sent_at_once_never_pass_the_quota(tmp_path: Path) -> None:
    """Three 3 MiB uploads at once under a 5 MB quota: one is kept, the others are 413s."""
    async with app_before(StandIn(MODEL), max_file_mb=4, storage_quota_mb=5) as harness:
        uploads = [
            harness.sdk.files.create(file=(f"{n}.bin", bytes([n]) * 3 * MIB), purpose="batch")
            for n in range(3)
        ]
        answers = await asyncio.gather(*uploads, return_exceptions=True)
        kept = [answer for answer in answers if isinstance(answer, FileObject)]
        refused = [answer for answer in answers if not isinstance(answer, FileObject)]
        assert len(kept) == 1, answers
        for error in refused:
            assert isinstance(error, openai.APIStatusError), error
            assert error.status_code == 413
            assert isinstance(error.body, dict)
            assert error.body["code"] == "storage_quota_exceeded"
            assert error.body["param"] == "file"
            assert "--storage-quota-mb" in error.body["message"]
        listed = (await harness.sdk.files.list()).data
        assert sum(file.bytes for file in listed) <= 5 * MIB
        assert _stored(tmp_path) == [kept[0].id]
        # the refused uploads held no room: what is left of the quota is free
        await harness.sdk.files.create(file=("s.bin", b"s" * (2 * MIB - 1)), purpose="batch")


async def test_a_batch_whose_outputs_have_no_room_fails_and_stores_nothing(
    tmp_path: Path,
) -> None:
    lines = [
        {"custom_id": str(n), "method": "POST", "url": ENDPOINT, "body": {"file": "file-gone"}}
        for n in range(8)
    ]
    source = _jsonl(lines)
    room = 512  # bytes left once the input is stored: less than its 8 error lines take
    quota = (len(source) + room) / MIB
    async with app_before(StandIn(MODEL), storage_quota_mb=quota) as harness:
        inputs = await harness.sdk.files.create(file=("in.jsonl", source), purpose="batch")
        created = await harness.sdk.batches.create(
            input_file_id=inputs.id,
            endpoint=ENDPOINT,  # type: ignore[arg-type]
            completion_window="24h",
        )
        batch = await _finished(harness, created.id)
        assert batch.status == "failed", batch
        assert batch.output_file_id is None
        assert batch.error_file_id is None
        assert batch.errors is not None
        assert batch.errors.data is not None
        [error] = batch.errors.data
        assert error.code == "storage_quota_exceeded"
        assert error.message is not None
        assert "--storage-quota-mb" in error.message
        assert [file.id for file in (await harness.sdk.files.list()).data] == [inputs.id]
        assert _stored(tmp_path) == [inputs.id]
        # the outputs' room was given back
        await harness.sdk.files.create(file=("s.bin", b"s" * (room - 1)), purpose="batch")
