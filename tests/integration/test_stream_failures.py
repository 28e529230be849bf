"""A backend stream that fails, on both streaming routes: the client learns it, typed.

Before any text the answer has not started, so the failure is an HTTP 503 with `Retry-After`
(the SDK retries it); after text it is the stream's last event, never a `done` or `[DONE]`
that would pass a truncated answer off as a whole one.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import openai
import pytest

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.standin import StandIn

CLIP = wav(3.0)
# The stand-in streams "language", " English", "<asr_text>", "Hello", " world."; with vLLM's
# role chunk first unless role_chunk=False.
BEFORE_TEXT = {
    "a 200 and then nothing": {"end_after": 0, "role_chunk": False},
    "a 200 and then it dies": {"fail_after": 0, "role_chunk": False},
    "it dies inside the language prefix": {"fail_after": 2},
    "it ends inside the language prefix": {"end_after": 2},
}
AFTER_TEXT = {
    "it dies after Hello": {"fail_after": 4},
    "it ends after Hello, unfinished": {"end_after": 4},
}
ROUTES = ("transcription", "chat")
AUDIO = {
    "type": "input_audio",
    "input_audio": {"data": base64.b64encode(CLIP).decode(), "format": "wav"},
}
MESSAGES = [{"role": "user", "content": [AUDIO]}]


async def _post(harness: Harness, route: str) -> httpx.Response:
    """One streamed request on `route`, read to its end."""
    if route == "transcription":
        return await harness.http.post(
            "/v1/audio/transcriptions",
            files={"file": ("clip.wav", CLIP)},
            data={"stream": "true"},
        )
    body = {"model": MODEL, "stream": True, "messages": MESSAGES}
    return await harness.http.post("/v1/chat/completions", json=body)


def _events(response: httpx.Response) -> list[Any]:
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


def _text(route: str, events: list[Any]) -> str:
    if route == "transcription":
        return "".join(e.get("delta", "") for e in events if isinstance(e, dict))
    return "".join(
        choice["delta"].get("content") or ""
        for event in events
        if isinstance(event, dict)
        for choice in event.get("choices", [])
    )


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("failure", BEFORE_TEXT.values(), ids=BEFORE_TEXT.keys())
async def test_a_stream_that_fails_before_any_text_is_a_503_to_retry(
    route: str, failure: dict[str, Any]
) -> None:
    async with app_before(StandIn(MODEL, **failure)) as harness:
        response = await _post(harness, route)
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "5"
        assert response.headers["content-type"] == "application/json"
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("server_error", "backend_unavailable")
        assert "retry" in error["message"] or "complete" in error["message"]
        # the server goes on serving, and no admission slot was kept by the failed stream
        harness.standin.fail_after = harness.standin.end_after = None
        harness.standin.role_chunk = True
        assert (await _post(harness, route)).status_code == 200
        assert harness.app.state.asr.upstream.admission.taken == 0


async def test_the_sdk_sees_the_503_as_a_typed_error() -> None:
    async with app_before(StandIn(MODEL, end_after=0, role_chunk=False)) as harness:
        with pytest.raises(openai.InternalServerError) as caught:
            await harness.sdk.audio.transcriptions.create(
                model=MODEL, file=("clip.wav", CLIP), stream=True
            )
        assert caught.value.status_code == 503
        assert caught.value.response.headers["retry-after"] == "5"
        with pytest.raises(openai.InternalServerError):
            await harness.sdk.chat.completions.create(model=MODEL, stream=True, messages=MESSAGES)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("failure", AFTER_TEXT.values(), ids=AFTER_TEXT.keys())
async def test_a_stream_that_fails_after_text_ends_with_an_error_event(
    route: str, failure: dict[str, Any]
) -> None:
    async with app_before(StandIn(MODEL, **failure)) as harness:
        response = await _post(harness, route)
        assert response.status_code == 200
        events = _events(response)
        assert _text(route, events[:-1]) == "Hello"
        assert events[-1] == {
            "error": {
                "message": events[-1]["error"]["message"],
                "type": "server_error",
                "param": None,
                "code": "backend_unavailable",
            }
        }
        assert "[DONE]" not in events
        assert not any(e.get("type") == "transcript.text.done" for e in events[:-1])
        assert harness.app.state.asr.upstream.admission.taken == 0


async def test_the_sdk_raises_on_a_chat_stream_cut_short() -> None:
    async with app_before(StandIn(MODEL, end_after=4)) as harness:
        stream = await harness.sdk.chat.completions.create(
            model=MODEL, stream=True, messages=MESSAGES
        )
        texts: list[str] = []
        with pytest.raises(openai.APIError, match="before its answer was complete"):
            await _read(stream, texts)
        assert "".join(texts) == "Hello"


async def _read(stream: Any, texts: list[str]) -> None:
    async for chunk in stream:
        texts.extend(choice.delta.content or "" for choice in chunk.choices)
