"""Batches of transcriptions through OpenAI's own SDK: files uploaded, a batch made of them,
polled until it completes, its output read; each line's answer is what the synchronous
endpoint answers for the same request, and a bad line fails alone."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import openai
import pytest
from openai.types import Batch, FileObject

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.standin import StandIn

TRANSCRIPTIONS = "/v1/audio/transcriptions"
FORMS: list[dict[str, Any]] = [
    {"response_format": "json"},
    {"response_format": "verbose_json", "timestamp_granularities": ["segment"]},
    {"response_format": "text", "prompt": "Names: Ada."},
    {"response_format": "srt"},
    {"response_format": "vtt", "language": "en"},
    {"response_format": "json", "include": ["logprobs"]},
]


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


async def _finished(harness: Harness, batch_id: str) -> Batch:
    deadline = time.monotonic() + 60
    while True:
        batch = await harness.sdk.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        assert time.monotonic() < deadline, batch
        await asyncio.sleep(0.1)


async def _synchronous(harness: Harness, clip: bytes, form: dict[str, Any]) -> Any:
    data = {key: value for key, value in form.items() if not isinstance(value, list)}
    for key, value in form.items():
        if isinstance(value, list):
            data[f"{key}[]"] = value
    answer = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("clip.wav", clip)},
        data={**data, "model": MODEL},
    )
    assert answer.status_code == 200, answer.text
    return (
        answer.json()
        if answer.headers["content-type"].startswith("application/json")
        else answer.text
    )


async def test_a_batch_answers_each_line_as_the_endpoint_does() -> None:
    async with app_before(StandIn(MODEL, describe=True)) as harness:
        sdk = harness.sdk
        clips = [wav(1.0 + i) for i in range(len(FORMS))]
        uploaded = [
            await sdk.files.create(file=(f"clip{i}.wav", clip), purpose="user_data")
            for i, clip in enumerate(clips)
        ]
        raw = (await harness.http.get(f"/v1/files/{uploaded[0].id}")).json()
        assert FileObject.model_validate(raw).purpose == "user_data"
        lines = [
            {"custom_id": f"clip-{i}", "method": "POST", "url": "/v1/audio/transcriptions",
             "body": {"file": file.id, "model": MODEL, **form}}
            for i, (file, form) in enumerate(zip(uploaded, FORMS, strict=True))
        ]  # fmt: skip
        lines.append(
            {"custom_id": "missing", "method": "POST", "url": "/v1/audio/transcriptions",
             "body": {"file": "file-nope", "model": MODEL}}
        )  # fmt: skip
        source = await sdk.files.create(file=("in.jsonl", _jsonl(lines)), purpose="batch")
        created = await sdk.batches.create(
            input_file_id=source.id,
            endpoint="/v1/audio/transcriptions",  # type: ignore[arg-type]
            completion_window="24h",
            metadata={"project": "minutes"},
        )
        assert created.status == "validating"
        batch = await _finished(harness, created.id)
        assert batch.status == "completed", batch
        raw = (await harness.http.get(f"/v1/batches/{batch.id}")).json()
        assert Batch.model_validate(raw).request_counts.model_dump() == {
            "total": len(lines), "completed": len(FORMS), "failed": 1
        }  # fmt: skip
        assert batch.metadata == {"project": "minutes"}
        assert batch.output_file_id
        assert batch.error_file_id
        output = (await sdk.files.content(batch.output_file_id)).text.splitlines()
        answers = {line["custom_id"]: line for line in map(json.loads, output)}
        assert sorted(answers) == [f"clip-{i}" for i in range(len(FORMS))]
        for i, (clip, form) in enumerate(zip(clips, FORMS, strict=True)):
            line = answers[f"clip-{i}"]
            assert line["error"] is None
            assert line["response"]["status_code"] == 200
            assert line["response"]["body"] == await _synchronous(harness, clip, form), form
        errors = [
            json.loads(x) for x in (await sdk.files.content(batch.error_file_id)).text.splitlines()
        ]
        assert [line["custom_id"] for line in errors] == ["missing"]
        assert errors[0]["response"]["status_code"] == 400
        assert errors[0]["response"]["body"]["error"]["param"] == "file"


async def test_a_bad_input_file_fails_the_batch_with_its_errors() -> None:
    async with app_before(StandIn(MODEL)) as harness:
        line = {"custom_id": "a", "method": "POST", "url": "/v1/audio/transcriptions", "body": {}}
        text = _jsonl([line]) + b"not json\n"
        source = await harness.sdk.files.create(file=("in.jsonl", text), purpose="batch")
        created = await harness.sdk.batches.create(
            input_file_id=source.id,
            endpoint="/v1/audio/transcriptions",  # type: ignore[arg-type]
            completion_window="24h",
        )
        batch = await _finished(harness, created.id)
        assert batch.status == "failed"
        assert batch.errors is not None
        assert batch.errors.data
        assert (batch.errors.data[0].code, batch.errors.data[0].line) == ("invalid_json", 2)


ASKED = {"input_file_id": "file-x", "endpoint": TRANSCRIPTIONS, "completion_window": "24h"}


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"endpoint": "/v1/embeddings"}, "endpoint"),
        ({"completion_window": "1h"}, "completion_window"),
        ({"input_file_id": None}, "input_file_id"),
        ({"metadata": {"k": "v" * 513}}, "metadata"),
        ({"output_expires_after": {"anchor": "created_at", "seconds": 60}},
         "output_expires_after.seconds"),
    ],
)  # fmt: skip
async def test_a_batch_that_cannot_be_made_is_a_400(change: dict[str, Any], param: str) -> None:
    body = {key: value for key, value in {**ASKED, **change}.items() if value is not None}
    async with app_before(StandIn(MODEL)) as harness:
        answer = await harness.http.post("/v1/batches", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["param"] == param


async def test_unknown_ids_are_404s_in_openais_shape() -> None:
    async with app_before(StandIn(MODEL)) as harness:
        with pytest.raises(openai.NotFoundError):
            await harness.sdk.batches.retrieve("batch_nope")
        with pytest.raises(openai.NotFoundError):
            await harness.sdk.files.retrieve("file-nope")
        answer = await harness.http.post(
            "/v1/batches",
            json={"input_file_id": "file-nope", "endpoint": "/v1/audio/transcriptions",
                  "completion_window": "24h"},
        )  # fmt: skip
        assert answer.status_code == 404
        assert answer.json()["error"]["param"] == "input_file_id"


async def test_an_audio_file_that_does_not_decode_is_refused_at_upload() -> None:
    async with app_before(StandIn(MODEL)) as harness:
        answer = await harness.http.post(
            "/v1/files",
            files={"file": ("x.wav", b"RIFF nonsense" * 10)},
            data={"purpose": "user_data"},
        )
        assert answer.status_code == 400, answer.text
        listed = await harness.sdk.files.list()
        assert listed.data == []
