"""What a Files or Batches client can get wrong, or the machine can: each a clear error in
OpenAI's shape, nothing half-stored, and the server goes on serving."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from qwen3_asr_server.entrypoints.jobs import fetch
from qwen3_asr_server.errors import MIB
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.process import ServerProcess, install_launcher
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_batches import _finished, _jsonl

ENDPOINT = "/v1/audio/transcriptions"


async def _run_lines(harness: Harness, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each body as a line of one batch; every line's output, in order."""
    lines = [
        {"custom_id": str(i), "method": "POST", "url": ENDPOINT, "body": body}
        for i, body in enumerate(bodies)
    ]
    source = await harness.sdk.files.create(file=("in.jsonl", _jsonl(lines)), purpose="batch")
    created = await harness.sdk.batches.create(
        input_file_id=source.id,
        endpoint=ENDPOINT,  # type: ignore[arg-type]
        completion_window="24h",
    )
    batch = await _finished(harness, created.id)
    assert batch.status == "completed", batch
    outputs = []
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            text = (await harness.sdk.files.content(file_id)).text
            outputs += [json.loads(line) for line in text.splitlines()]
    return sorted(outputs, key=lambda line: int(line["custom_id"]))


def _audio_server() -> ThreadedServer:
    clip = wav(1.0)

    async def serve(_: Any) -> Response:
        return Response(clip, media_type="audio/wav")

    return ThreadedServer(Starlette(routes=[Route("/clip.wav", serve)])).start()


async def test_a_line_with_a_foreign_or_missing_file_fails_alone() -> None:
    async with app_before(StandIn(MODEL)) as harness:
        inputs = await harness.sdk.files.create(file=("x.jsonl", b"{}\n"), purpose="batch")
        clip = await harness.sdk.files.create(file=("a.wav", wav(1.0)), purpose="user_data")
        outputs = await _run_lines(
            harness,
            [{"file": clip.id}, {"file": inputs.id}, {}, {"file": clip.id, "response_format": "x"},
             {"file": clip.id, "stream": True}],
        )  # fmt: skip
        statuses = [line["response"]["status_code"] for line in outputs]
        assert statuses == [200, 400, 400, 400, 400]
        params = [line["response"]["body"]["error"]["param"] for line in outputs[1:]]
        assert params == ["file", "file", "response_format", "stream"]


async def test_file_urls_are_off_unless_allowed_and_never_private() -> None:
    server = _audio_server()
    try:
        url = f"{server.url}/clip.wav"
        async with app_before(StandIn(MODEL)) as harness:
            [off] = await _run_lines(harness, [{"file_url": url}])
            assert off["response"]["body"]["error"]["code"] == "file_url_not_allowed"
        async with app_before(StandIn(MODEL), batch_file_urls=True) as harness:
            named = url.replace("127.0.0.1", "localhost")  # a name that resolves to loopback
            outputs = await _run_lines(
                harness, [{"file_url": url}, {"file_url": named}, {"file_url": "ftp://x/a.wav"}]
            )
            errors = [line["response"]["body"]["error"] for line in outputs]
            assert [error["param"] for error in errors] == ["file_url"] * 3
            assert [error["code"] for error in errors[:2]] == ["file_url_not_allowed"] * 2
    finally:
        server.stop()


async def test_a_file_url_is_transcribed_when_its_address_is_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The download itself, with the guard told that loopback is public (no public address
    can be reached from the tests)."""
    monkeypatch.setattr(fetch, "public", lambda address: True)
    server = _audio_server()
    try:
        async with app_before(StandIn(MODEL, describe=True), batch_file_urls=True) as harness:
            [line] = await _run_lines(harness, [{"file_url": f"{server.url}/clip.wav"}])
            assert line["response"]["status_code"] == 200, line
            assert line["response"]["body"]["text"] == "Heard 1.00 s."
            missing = f"{server.url}/gone.wav"
            [line] = await _run_lines(harness, [{"file_url": missing}])
            assert line["response"]["body"]["error"]["message"] == fetch.NOT_FETCHED
    finally:
        server.stop()


async def test_uploads_over_the_file_limit_or_the_quota_are_413s_and_store_nothing(
    tmp_path: Path,
) -> None:
    async with app_before(StandIn(MODEL), max_file_mb=1, storage_quota_mb=1.5) as harness:
        huge = {"content-length": str(10 << 30), "content-type": "multipart/form-data; boundary=x"}
        answer = await harness.http.post("/v1/files", content=b"--x\r\n", headers=huge)
        assert answer.status_code == 413
        assert answer.json()["error"]["code"] == "file_too_large"
        big = await harness.http.post(
            "/v1/files", files={"file": ("b.bin", b"x" * (2 * MIB))}, data={"purpose": "batch"}
        )
        assert big.status_code == 413
        first = await harness.sdk.files.create(file=("a.bin", b"x" * MIB), purpose="batch")
        second = await harness.http.post(
            "/v1/files", files={"file": ("c.bin", b"y" * MIB)}, data={"purpose": "batch"}
        )
        assert second.status_code == 413
        assert second.json()["error"]["code"] == "storage_quota_exceeded"
        assert [file.id for file in (await harness.sdk.files.list()).data] == [first.id]
        stored = list((tmp_path / "jobs-data" / "files").iterdir())
        assert [path.name for path in stored] == [first.id]


async def test_a_file_past_its_expiry_is_gone() -> None:
    async with app_before(StandIn(MODEL), file_retention_days=3 / 86400) as harness:
        kept = await harness.sdk.files.create(file=("a.jsonl", b"{}\n"), purpose="batch")
        assert (await harness.http.get(f"/v1/files/{kept.id}")).status_code == 200
        await asyncio.sleep(4)
        assert (await harness.http.get(f"/v1/files/{kept.id}")).status_code == 404
        assert (await harness.sdk.files.list()).data == []


def test_a_full_disk_is_a_507_and_loses_nothing_stored(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = ServerProcess(tmp_path, ["--model", "tiny"], max_file_bytes=3 * MIB)
    try:
        server.wait_for_health(200)
        small = b"".join(json.dumps({"n": i}).encode() + b"\n" for i in range(50_000))[:MIB]
        kept = httpx.post(
            f"{server.url}/v1/files", files={"file": ("a.jsonl", small)}, data={"purpose": "batch"}
        )
        assert kept.status_code == 200, kept.text
        full = httpx.post(
            f"{server.url}/v1/files",
            files={"file": ("b.jsonl", b"z" * (4 * MIB))},
            data={"purpose": "batch"},
            timeout=30,
        )
        assert full.status_code == 507, full.text
        assert full.json()["error"]["code"] == "insufficient_storage"
        file_id = kept.json()["id"]
        content = httpx.get(f"{server.url}/v1/files/{file_id}/content")
        assert content.content == small
        listed = httpx.get(f"{server.url}/v1/files").json()["data"]
        assert [file["id"] for file in listed] == [file_id]
        assert not list((tmp_path / "data" / "files").glob(".*partial"))
        assert server.wait_for_health(200)["status"] == "ok"
    finally:
        server.stop()
