"""Usage per key, in OpenAI's shape, read with the openai SDK's admin client: the seconds of
audio of each key's transcriptions and batch lines, grouped as asked, adding up to what was
sent, kept across a restart (in SQLite and in PostgreSQL); refused to keys that are not admin
keys."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.admin.organization.usage_audio_transcriptions_response import (
    UsageAudioTranscriptionsResponse,
)

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_projects import finished, line, sdk
from tests.integration.middleware.test_keys_file import KEYS
from tests.integration.realtime.test_client_secrets import bearer
from tests.integration.realtime.test_realtime import (
    completed,
    send,
    serving,
    session,
    stream,
    until,
)
from tests.unit.jobs.test_store import database

__all__ = ["database"]  # the fixture: usage kept in SQLite, and in PostgreSQL


def admin(harness: Harness) -> openai.AsyncOpenAI:
    transport = httpx.ASGITransport(app=harness.app)
    return openai.AsyncOpenAI(
        base_url="http://asr.test/v1",
        api_key="unused",
        admin_api_key="sk-admin",
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )


def results(page: UsageAudioTranscriptionsResponse, field: str) -> dict[Any, tuple[int, int]]:
    """Each group's seconds and requests, over the page's buckets."""
    found: dict[Any, tuple[int, int]] = {}
    for bucket in page.data:
        for result in bucket.results:
            assert result.object == "organization.usage.audio_transcriptions.result"
            name = getattr(result, field) if field else None
            seconds, requests = found.get(name, (0, 0))
            found[name] = (seconds + result.seconds, requests + result.num_model_requests)
    return found


async def test_usage_adds_up_per_key_and_project_and_survives_a_restart(
    database: str | None, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(KEYS)
    settings: dict[str, Any] = {"keys_file": keys, "api_key": "sk-admin", "jobs_db": database}
    start = int(time.time()) - 60
    async with app_before(StandIn(MODEL), **settings) as harness:
        notes, calls = sdk(harness, "sk-notes"), sdk(harness, "sk-calls")
        for _ in range(2):
            await notes.audio.transcriptions.create(model=MODEL, file=("a.wav", wav(2.0)))
        await calls.audio.transcriptions.create(model=MODEL, file=("b.wav", wav(3.0)))
        clip = await calls.files.create(file=("c.wav", wav(1.0)), purpose="user_data")
        source = await calls.files.create(file=("in.jsonl", line("c", clip.id)), purpose="batch")
        batch = await calls.batches.create(
            input_file_id=source.id,
            endpoint="/v1/audio/transcriptions",  # type: ignore[arg-type]
            completion_window="24h",
        )
        assert (await finished(calls, batch.id)).status == "completed"

        usage = admin(harness).admin.organization.usage
        by_key = await usage.audio_transcriptions(start_time=start, group_by=["api_key_id"])
        assert UsageAudioTranscriptionsResponse.model_validate(by_key.model_dump())
        assert by_key.object == "page"
        assert results(by_key, "api_key_id") == {"notes-web": (4, 2), "calls-batch": (4, 2)}
        shown = (await harness.http.get("/metrics")).text  # the same, as Prometheus sees it
        assert 'qwen3_asr_key_audio_seconds_total{key="notes-web"} 4.0' in shown
        assert 'qwen3_asr_key_audio_seconds_total{key="calls-batch"} 4.0' in shown
        assert 'qwen3_asr_key_requests_total{key="notes-web"} 2.0' in shown
        with pytest.raises(openai.PermissionDeniedError):
            await sdk(harness, "sk-notes").get(
                "/organization/usage/audio_transcriptions",
                cast_to=object,
                options={"params": {"start_time": start}},
            )

    async with app_before(StandIn(MODEL), **settings) as again:
        usage = admin(again).admin.organization.usage
        by_project = await usage.audio_transcriptions(
            start_time=start, group_by=["project_id", "model"]
        )
        assert results(by_project, "project_id") == {"notes": (4, 2), "calls": (4, 2)}
        assert set(results(by_project, "model")) == {MODEL}
        whole = await usage.audio_transcriptions(start_time=start, bucket_width="1m", limit=5)
        assert [b.end_time - b.start_time for b in whole.data] == [60] * len(whole.data)
        assert results(whole, "") == {None: (8, 4)}
        only = await usage.audio_transcriptions(start_time=start, project_ids=["calls"])
        assert results(only, "") == {None: (4, 2)}


async def test_a_long_range_comes_in_pages_with_empty_buckets(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(KEYS)
    async with app_before(StandIn(MODEL), keys_file=keys, api_key="sk-admin") as harness:
        await sdk(harness, "sk-notes").audio.transcriptions.create(
            model=MODEL, file=("a.wav", wav(2.0))
        )
        usage = admin(harness).admin.organization.usage
        now = int(time.time())
        start = now - now % 3600 - 5 * 3600
        first = await usage.audio_transcriptions(start_time=start, bucket_width="1h", limit=4)
        assert [b.start_time for b in first.data] == [start + n * 3600 for n in range(4)]
        assert all(b.results == [] for b in first.data)
        assert first.has_more
        assert first.next_page == str(start + 4 * 3600)
        rest = await usage.audio_transcriptions(
            start_time=start, bucket_width="1h", limit=4, page=first.next_page
        )
        assert not rest.has_more
        assert results(rest, "") == {None: (2, 1)}
        for bad in ({"bucket_width": "1w"}, {"limit": 0}, {"group_by": ["user"]}):
            with pytest.raises(openai.BadRequestError) as refused:
                await usage.audio_transcriptions(start_time=start, **bad)  # type: ignore[arg-type]
            assert refused.value.param in ("bucket_width", "limit", "group_by")
        await asyncio.sleep(0)
        assert json.dumps(first.model_dump())  # plain JSON all through


async def test_a_realtime_sessions_utterances_count_for_its_key(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    await asyncio.to_thread(keys.write_text, KEYS)
    start = int(time.time()) - 60
    with serving(StandIn(MODEL, describe=True), api_key="sk-admin", keys_file=keys) as url:
        async with session(url, **bearer("sk-notes")) as ws:
            vad_off = {"type": "transcription", "audio": {"input": {"turn_detection": None}}}
            await send(ws, "session.update", session=vad_off)
            await until(ws, lambda events: len(events) == 1)
            for _ in range(2):
                await stream(ws, spoken_pcm([(1.0, True), (1.0, False)]))
                await send(ws, "input_audio_buffer.commit")
                await until(ws, completed(1))
        client = openai.AsyncOpenAI(
            base_url=url.replace("ws://", "http://") + "/v1", api_key="-", admin_api_key="sk-admin"
        )
        page = await client.admin.organization.usage.audio_transcriptions(
            start_time=start, group_by=["api_key_id"]
        )
    assert results(page, "api_key_id") == {"notes-web": (4, 2)}
