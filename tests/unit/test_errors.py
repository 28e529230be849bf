"""Errors in OpenAI's shape: the type that goes with each status."""

from __future__ import annotations

from qwen3_asr_server.errors import APIError, error_type


def test_error_types_follow_openai() -> None:
    assert error_type(400) == "invalid_request_error"
    assert error_type(401) == "invalid_request_error"
    assert error_type(404) == "invalid_request_error"
    assert error_type(500) == "server_error"
    assert error_type(503) == "server_error"
    assert APIError(418, "teapot").body()["error"]["type"] == "invalid_request_error"
