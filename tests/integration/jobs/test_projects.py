"""Projects own their files and batches (`--keys-file`), through the openai SDK: another
project's ids answer 404 everywhere, lists show a project's own, a batch reads its project's
files only and its output is its project's, each project's quota and webhook are its own, and
what a server with one key made before stays readable with that key."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types import Batch

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_webhooks import SECRET, Receiver

ENDPOINT = "/v1/audio/transcriptions"
KEYS = f"""
[[projects]]
name = "notes"

[[projects]]
name = "calls"
storage_quota_mb = 0.05
webhook_url = "{{hook}}"
webhook_secret = "{SECRET}"

[[keys]]
name = "notes-web"
project = "notes"
key = "sk-notes"

[[keys]]
name = "calls-batch"
project = "calls"
key = "sk-calls"
"""


def sdk(harness: Harness, key: str) -> openai.AsyncOpenAI:
    transport = httpx.ASGITransport(app=harness.app)
    return openai.AsyncOpenAI(
        base_url="http://asr.test/v1",
        api_key=key,
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )


@asynccontextmanager
async def projects(tmp_path: Path, hook: str, **settings: Any) -> AsyncIterator[Harness]:
    keys = tmp_path / "keys.toml"
    keys.write_text(KEYS.replace("{hook}", hook))
    async with app_before(
        StandIn(MODEL, describe=True), keys_file=keys, api_key="sk-admin", **settings
    ) as harness:
        yield harness


async def finished(client: openai.AsyncOpenAI, batch_id: str) -> Batch:
    deadline = time.monotonic() + 60
    while (batch := await client.batches.retrieve(batch_id)).status not in (
        "completed",
        "failed",
    ):
        assert time.monotonic() < deadline, batch
        await asyncio.sleep(0.1)
    return batch


def line(custom_id: str, file_id: str) -> bytes:
    body = {"file": file_id, "model": MODEL}
    row = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(row).encode() + b"\n"


async def test_two_projects_cannot_see_each_others_files_or_batches(tmp_path: Path) -> None:
    receiver = Receiver()
    receiver.server.start()
    try:
        async with projects(tmp_path, f"{receiver.server.url}/hook") as harness:
            notes, calls = sdk(harness, "sk-notes"), sdk(harness, "sk-calls")
            theirs = await notes.files.create(file=("a.wav", wav(1.0)), purpose="user_data")
            ours = await calls.files.create(file=("b.wav", wav(1.0)), purpose="user_data")
            assert [each.id for each in (await notes.files.list()).data] == [theirs.id]
            assert [each.id for each in (await calls.files.list()).data] == [ours.id]
            for call in (
                calls.files.retrieve(theirs.id),
                calls.files.content(theirs.id),
                calls.files.delete(theirs.id),
            ):
                with pytest.raises(openai.NotFoundError) as refused:
                    await call
                assert f"No such File object: {theirs.id}" in refused.value.message
            assert (await notes.files.retrieve(theirs.id)).id == theirs.id  # still there

            source = await calls.files.create(
                file=("in.jsonl", line("ours", ours.id) + line("theirs", theirs.id)),
                purpose="batch",
            )
            with pytest.raises(openai.NotFoundError):
                await notes.batches.create(
                    input_file_id=source.id,
                    endpoint=ENDPOINT,  # type: ignore[arg-type]
                    completion_window="24h",
                )
            created = await calls.batches.create(
                input_file_id=source.id,
                endpoint=ENDPOINT,  # type: ignore[arg-type]
                completion_window="24h",
            )
            batch = await finished(calls, created.id)
            assert batch.status == "completed"
            assert batch.request_counts is not None
            assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 1)
            assert batch.output_file_id is not None
            assert batch.error_file_id is not None
            errors = (await calls.files.content(batch.error_file_id)).text
            assert json.loads(errors)["response"]["body"]["error"]["code"] == "file_not_found"
            listed = {each.id for each in (await calls.files.list()).data}
            assert {batch.output_file_id, batch.error_file_id} <= listed
            with pytest.raises(openai.NotFoundError):
                await notes.files.content(batch.output_file_id)
            assert [each.id for each in (await calls.batches.list()).data] == [batch.id]
            assert (await notes.batches.list()).data == []
            for call in (notes.batches.retrieve(batch.id), notes.batches.cancel(batch.id)):
                with pytest.raises(openai.NotFoundError):
                    await call

            (event,) = await receiver.events(1)  # calls' own webhook: notes has none
            assert (event.type, event.data.id) == ("batch.completed", batch.id)
    finally:
        receiver.server.stop()


async def test_a_project_is_held_to_its_own_storage_quota(tmp_path: Path) -> None:
    async with projects(tmp_path, "http://127.0.0.1:9/hook") as harness:
        notes, calls = sdk(harness, "sk-notes"), sdk(harness, "sk-calls")
        await calls.files.create(file=("a.wav", wav(1.0)), purpose="user_data")  # 32 KB
        with pytest.raises(openai.APIStatusError) as refused:
            await calls.files.create(file=("b.wav", wav(1.0)), purpose="user_data")
        assert refused.value.status_code == 413
        assert "the project's storage_quota_mb" in refused.value.message
        await notes.files.create(file=("b.wav", wav(1.0)), purpose="user_data")


async def test_files_stored_with_one_key_stay_its_when_a_keys_file_comes(tmp_path: Path) -> None:
    async with app_before(StandIn(MODEL), api_key="sk-admin") as before:
        kept = await sdk(before, "sk-admin").files.create(
            file=("a.wav", wav(1.0)), purpose="user_data"
        )
        content = (await sdk(before, "sk-admin").files.content(kept.id)).content
    async with projects(tmp_path, "http://127.0.0.1:9/hook") as after:
        admin = sdk(after, "sk-admin")
        assert [each.id for each in (await admin.files.list()).data] == [kept.id]
        assert (await admin.files.content(kept.id)).content == content
        with pytest.raises(openai.NotFoundError):
            await sdk(after, "sk-notes").files.retrieve(kept.id)
