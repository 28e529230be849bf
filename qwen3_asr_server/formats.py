"""Shape the result of a transcription as the client asked (`response_format`)."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse, PlainTextResponse, Response


def token_usage(upstream_usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """OpenAI's transcription usage (`type: tokens`) from a chat completion's usage."""
    if not upstream_usage:
        return None
    prompt = int(upstream_usage.get("prompt_tokens") or 0)
    completion = int(upstream_usage.get("completion_tokens") or 0)
    return {
        "type": "tokens",
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
    }


def transcription(
    text: str,
    response_format: str,
    *,
    usage: dict[str, Any] | None = None,
    note: str | None = None,
) -> Response:
    if response_format == "text":
        return PlainTextResponse(text + "\n")
    body: dict[str, Any] = {"text": text}
    if usage is not None:
        body["usage"] = usage
    if note is not None:
        body["_note"] = note
    return JSONResponse(body)
