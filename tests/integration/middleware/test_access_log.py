"""The access log through HTTP: one line per request, by route template, with its request
id, status, duration and audio seconds; transcripts only with `log_transcripts`."""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import AsyncIterator

import pytest

from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn

ACCESS = "qwen3_asr_server.access"
LINE = re.compile(
    r"request_id=(?P<id>\S+) method=(?P<method>\S+) path=(?P<path>\S+) status=(?P<status>\d+) "
    r"duration_ms=(?P<ms>\d+\.\d)(?: audio_s=(?P<audio>\d+\.\d\d))?"
)


def _access(caplog: pytest.LogCaptureFixture) -> list[dict[str, str | None]]:
    """The access lines logged so far, parsed; each must be a whole line of the format."""
    lines = []
    for record in caplog.records:
        if record.name == ACCESS:
            assert record.levelno == logging.INFO
            match = LINE.fullmatch(record.getMessage())
            assert match, record.getMessage()
            lines.append(match.groupdict())
    return lines


@pytest.fixture
async def logged(
    standin: tuple[StandIn, ThreadedServer], caplog: pytest.LogCaptureFixture
) -> AsyncIterator[Harness]:
    """The harness, with every log record from DEBUG up captured once it is ready."""
    fake, server = standin
    async for h in start_harness(Settings(model=MODEL, backend_url=server.url), fake):
        caplog.set_level(logging.DEBUG)
        caplog.clear()
        yield h


async def test_one_line_per_request_with_route_template_and_request_id(
    logged: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    await logged.http.get("/v1/models/whisper-1", headers={"x-request-id": "r-model"})
    await logged.http.get("/v1/models/gpt-9", headers={"x-request-id": "r-404"})
    await logged.http.get("/no/such/path/123", headers={"x-request-id": "r-none"})
    minted = await logged.http.get("/health")
    lines = _access(caplog)
    assert [(line["id"], line["method"], line["path"], line["status"]) for line in lines] == [
        ("r-model", "GET", "/v1/models/{model_id:path}", "200"),
        ("r-404", "GET", "/v1/models/{model_id:path}", "404"),
        ("r-none", "GET", "unmatched", "404"),
        (minted.headers["x-request-id"], "GET", "/health", "200"),
    ]
    assert all(line["audio"] is None for line in lines)
    access = [record.getMessage() for record in caplog.records if record.name == ACCESS]
    assert not any("whisper-1" in line for line in access)  # the template, not the raw path


async def test_transcriptions_log_their_audio_seconds(
    logged: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    headers = {"x-request-id": "r-audio"}
    files = {"file": ("a.wav", wav(1.5))}
    response = await logged.http.post("/v1/audio/transcriptions", files=files, headers=headers)
    assert response.status_code == 200
    streamed = await logged.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", wav(2.0))},
        data={"stream": "true"},
        headers={"x-request-id": "r-stream"},
    )
    assert streamed.text.count("transcript.text.done") == 1
    translated = await logged.http.post("/v1/audio/translations", files=files)
    undecodable = await logged.http.post(
        "/v1/audio/transcriptions", files={"file": ("a.wav", b"not audio at all")}
    )
    assert undecodable.status_code == 400
    lines = _access(caplog)
    assert [(line["id"], line["status"], line["audio"]) for line in lines] == [
        ("r-audio", "200", "1.50"),
        ("r-stream", "200", "2.00"),  # logged once the stream is through
        (translated.headers["x-request-id"], "200", "1.50"),
        (undecodable.headers["x-request-id"], "400", None),
    ]
    assert lines[0]["path"] == "/v1/audio/transcriptions"
    assert lines[2]["path"] == "/v1/audio/translations"
    assert all(float(line["ms"] or 0) > 0 for line in lines)


async def test_errors_are_logged_with_the_status_the_client_got(
    standin: tuple[StandIn, ThreadedServer], caplog: pytest.LogCaptureFixture
) -> None:
    fake, server = standin
    settings = Settings(model=MODEL, backend_url=server.url, api_key="k", max_json_mb=0.01)
    async for h in start_harness(settings, fake, api_key="k"):

        async def boom() -> None:
            raise RuntimeError("internals")

        h.app.add_api_route("/boom", boom)
        caplog.set_level(logging.INFO)
        caplog.clear()
        keyed = {"Authorization": "Bearer k"}
        # a route added later is closed too (middleware.auth): it gets the key
        await h.http.get("/boom", headers={**keyed, "x-request-id": "r-500"})
        await h.http.get("/v1/models", headers={"x-request-id": "r-401"})
        too_big = {"messages": ["x" * 20_000]}
        keyed["x-request-id"] = "r-413"
        await h.http.post("/v1/chat/completions", json=too_big, headers=keyed)
        assert [(line["id"], line["path"], line["status"]) for line in _access(caplog)] == [
            ("r-500", "/boom", "500"),
            ("r-401", "/v1/models", "401"),
            ("r-413", "/v1/chat/completions", "413"),
        ]


async def test_no_transcript_or_audio_is_logged_by_default(
    logged: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    audio = wav(0.5)
    await logged.sdk.audio.transcriptions.create(model=MODEL, file=("a.wav", audio))
    await logged.http.post(
        "/v1/audio/transcriptions", files={"file": ("a.wav", audio)}, data={"stream": "true"}
    )
    part = {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(audio).decode(), "format": "wav"},
    }
    answer = await logged.sdk.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": [part]}]
    )
    assert answer.choices[0].message.content == "Hello world."
    assert len(_access(caplog)) == 3
    # the SDK's own debug lines show what the test sent; the rest is the server's
    server = [record for record in caplog.records if not record.name.startswith("openai")]
    assert server
    for record in server:
        logged = f"{record.getMessage()} {record.__dict__}"
        assert "Hello" not in logged
        assert part["input_audio"]["data"] not in logged
        assert len(logged) < 2000, logged[:300]  # no audio in any encoding


async def test_log_transcripts_logs_the_text_with_the_request_id(
    standin: tuple[StandIn, ThreadedServer], caplog: pytest.LogCaptureFixture
) -> None:
    fake, server = standin
    settings = Settings(model=MODEL, backend_url=server.url, log_transcripts=True)
    async for h in start_harness(settings, fake):
        caplog.set_level(logging.INFO)
        caplog.clear()
        files = {"file": ("a.wav", wav(0.5))}
        await h.http.post(
            "/v1/audio/transcriptions", files=files, headers={"x-request-id": "r-text"}
        )
        await h.http.post(
            "/v1/audio/transcriptions",
            files=files,
            data={"stream": "true", "language": "fr"},
            headers={"x-request-id": "r-streamed"},
        )
        transcripts = [
            (record.levelno, record.getMessage())
            for record in caplog.records
            if record.name == "qwen3_asr_server.transcripts"
        ]
        assert transcripts == [
            (logging.INFO, 'request_id=r-text transcript="Hello world."'),
            (logging.INFO, 'request_id=r-streamed transcript="Bonjour le monde."'),
        ]
