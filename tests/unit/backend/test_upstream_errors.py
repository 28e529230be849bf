"""vLLM's error answers, in either of its shapes, as the errors a client of OpenAI expects."""

from __future__ import annotations

import pytest

from qwen3_asr_server.backend.upstream import upstream_error


@pytest.mark.parametrize(
    "payload",
    [
        {"error": {"message": "bad audio", "type": "BadRequestError", "param": "x", "code": 400}},
        {
            "object": "error",
            "message": "bad audio",
            "type": "BadRequestError",
            "param": "x",
            "code": 400,
        },
    ],
)
def test_both_vllm_error_shapes_become_openai_400s(payload: dict) -> None:
    error = upstream_error(400, payload)
    assert error.body() == {
        "error": {
            "message": "bad audio",
            "type": "invalid_request_error",
            "param": "x",
            "code": None,
        }
    }


@pytest.mark.parametrize(
    ("status", "payload", "expected_status", "code"),
    [
        (401, {"error": "Unauthorized"}, 502, "backend_auth_failed"),
        (404, {"error": {"message": "no model", "code": 404}}, 502, "backend_error"),
        (500, "Internal Server Error", 502, "backend_error"),
        (503, {"error": {"message": "overloaded"}}, 503, "backend_unavailable"),
        (429, None, 503, "backend_unavailable"),
        (422, {"detail": "x"}, 400, None),
    ],
)
def test_other_upstream_failures(
    status: int, payload: object, expected_status: int, code: str | None
) -> None:
    error = upstream_error(status, payload)
    assert error.status == expected_status
    assert error.code == code
    assert error.message
    if expected_status == 503:
        assert error.headers == {"Retry-After": "5"}
