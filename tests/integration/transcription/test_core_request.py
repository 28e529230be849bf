"""The way in without HTTP: a recording that is no upload (a file on disk, samples decoded
already) given to the app's transcription service as the core's request, answered exactly as
the audio route answers the same audio and options."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qwen3_asr_server.errors import APIError
from qwen3_asr_server.model.languages import resolve
from qwen3_asr_server.speech.audio import Audio
from qwen3_asr_server.transcription.formats import FORMATS
from qwen3_asr_server.transcription.request import Body, Encoded, Request
from qwen3_asr_server.transcription.service import TranscriptionService
from tests.fixtures.audio import wav
from tests.fixtures.harness import Harness, app_before
from tests.fixtures.standin import StandIn

SPEECH = wav(1.5)
SAMPLES = Audio(np.frombuffer(SPEECH[44:], dtype="<i2").copy())  # what a live door has
TRANSCRIPTIONS = "/v1/audio/transcriptions"
# each: the route, its form fields, and the same asked of the core with no form
CASES: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {
    "verbose_json in French, with context": (
        TRANSCRIPTIONS,
        {
            "response_format": "verbose_json",
            "language": "fr",
            "prompt": "A talk.",
            "temperature": "0.2",
            "timestamp_granularities[]": "segment",
        },
        {
            "response_format": FORMATS["verbose_json"],
            "forced": resolve("fr"),
            "context": "A talk.",
            "temperature": 0.2,
            "timestamp_granularities": frozenset({"segment"}),
        },
    ),
    "json with logprobs, billed in tokens": (
        TRANSCRIPTIONS,
        {"model": "gpt-4o-transcribe", "include[]": "logprobs"},
        {"response_format": FORMATS["json"], "logprobs": True, "usage_in_seconds": False},
    ),
    "srt": (TRANSCRIPTIONS, {"response_format": "srt"}, {"response_format": FORMATS["srt"]}),
    "a translation": (
        "/v1/audio/translations",
        {"response_format": "verbose_json"},
        {"response_format": FORMATS["verbose_json"], "task": "translate"},
    ),
}


def service(harness: Harness) -> TranscriptionService:
    found: TranscriptionService = harness.app.state.asr.transcription
    return found


async def answered(harness: Harness, asked: Request, request_id: str) -> Body:
    """The service's answer, the way any door asks for it: accept, transcribe, release."""
    job = await service(harness).accept(asked)
    try:
        return await service(harness).transcribe(job, request_id)
    finally:
        job.release()


def asked_of_model(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat requests the stand-in got, without what differs from one request to the next."""
    return [
        {key: value for key, value in each.items() if key not in {"x-request-id", "connection"}}
        for each in requests
    ]


async def uploaded(harness: Harness, path: str, form: dict[str, str]) -> Body:
    response = await harness.http.post(
        path, files={"file": ("clip.wav", SPEECH, "audio/x-wav")}, data=form
    )
    assert response.status_code == 200, response.text
    is_json = response.headers["content-type"].startswith("application/json")
    body: Body = response.json() if is_json else response.text
    return body


@pytest.mark.parametrize("case", CASES)
async def test_a_stored_file_and_samples_are_answered_as_the_same_upload_is(
    harness: Harness, tmp_path: Path, case: str
) -> None:
    path, form, options = CASES[case]
    over_http = await uploaded(harness, path, form)
    sent = list(harness.standin.requests)
    stored = tmp_path / "clip.wav"
    stored.write_bytes(SPEECH)
    with stored.open("rb") as file:
        from_disk = Request(Encoded(file, stored.stat().st_size), **options)
        assert await answered(harness, from_disk, "batch-1") == over_http
    # the model was asked the same
    assert asked_of_model(harness.standin.requests[len(sent) :]) == asked_of_model(sent)
    from_samples = Request(SAMPLES, **options)
    assert await answered(harness, from_samples, "call-1") == over_http
    assert service(harness).budget.ledger.total() == 0  # each gave its audio's room back


async def test_samples_stream_the_events_an_upload_streams(harness: Harness) -> None:
    response = await harness.http.post(
        TRANSCRIPTIONS, files={"file": ("clip.wav", SPEECH)}, data={"stream": "true"}
    )
    assert response.status_code == 200, response.text
    job = await service(harness).accept(Request(SAMPLES, FORMATS["json"]))
    events = await service(harness).stream(job, "call-1")
    try:
        streamed = "".join([event async for event in events])
    finally:
        await events.aclose()
    assert streamed == response.text
    assert service(harness).budget.ledger.total() == 0


async def test_samples_longer_than_the_server_takes_are_refused_as_an_upload_is() -> None:
    async with app_before(StandIn(), max_audio_seconds=1.0) as harness:
        with pytest.raises(APIError) as caught:
            await service(harness).accept(Request(SAMPLES, FORMATS["json"]))
        assert caught.value.code == "audio_too_long"
        assert service(harness).budget.ledger.total() == 0
        assert harness.standin.requests == []
        short = dataclasses.replace(SAMPLES, samples=SAMPLES.samples[:16000])
        assert await answered(harness, Request(short, FORMATS["text"]), "call-1") == (
            "Hello world.\n"
        )
