"""Errors in OpenAI's shape: the type that goes with each status, one root, one way to tell."""

from __future__ import annotations

from typing import Any

from qwen3_asr_server.entrypoints.middleware.errors import response, send_error
from qwen3_asr_server.errors import (
    APIError,
    EventError,
    FatalBackendError,
    LaunchError,
    ServerError,
    error_type,
)


def test_error_types_follow_openai() -> None:
    assert error_type(400) == "invalid_request_error"
    assert error_type(401) == "invalid_request_error"
    assert error_type(404) == "invalid_request_error"
    assert error_type(500) == "server_error"
    assert error_type(503) == "server_error"
    assert APIError(418, "teapot").body()["error"]["type"] == "invalid_request_error"


def test_every_error_has_one_root_and_says_how_it_is_told() -> None:
    for error in (
        APIError(429, "busy", code="rate_limit_exceeded"),
        EventError("bad", "invalid_value", "session.type"),
        LaunchError("install vLLM"),
        FatalBackendError("vLLM exited"),
    ):
        assert isinstance(error, ServerError)
        answer = response(error)
        assert answer.status_code == error.status
        assert set(error.body()["error"]) == {"message", "type", "param", "code"}
    assert EventError("bad", "invalid_value").status == 400
    assert LaunchError("x").status == FatalBackendError("x").status == 503
    assert LaunchError("x").type == "server_error"


async def test_a_refused_handshake_without_an_http_answer_is_closed_with_its_reason() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    scope = {"type": "websocket", "extensions": {}}
    await send_error(APIError(401, "No key."), scope, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008, "reason": "No key."}]
    sent.clear()
    await send_error(APIError(429, "Full."), scope, receive, send)  # a client may come back
    assert sent == [{"type": "websocket.close", "code": 1013, "reason": "Full."}]
    sent.clear()
    scope["extensions"] = {"websocket.http.response": {}}
    await send_error(APIError(401, "No key."), scope, receive, send)
    assert [message["type"] for message in sent] == [
        "websocket.http.response.start",
        "websocket.http.response.body",
    ]
    assert sent[0]["status"] == 401
