"""Body size limits, enforced while the body streams in, before any of it is parsed.

A client that declares a body over its route's limit (`Content-Length`) is refused before a
byte is read; one that streams without declaring it is cut off at the limit. Either way the
answer is OpenAI's 413 with `Connection: close`, and memory holds no more than the limit
(uploads are spooled to disk by the form parser; a chat body is at most `--max-json-mb`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import MIB, APIError, json_too_large, too_large
from ...settings.composite import Settings

FORM_OVERHEAD = MIB  # room for the other form fields and the multipart framing
UPLOAD_PATHS = ("/v1/audio/transcriptions", "/v1/audio/translations", "/v1/audio/alignments")
JSON_PATHS = ("/v1/chat/completions", "/v1/batches", "/v1/realtime/client_secrets")


@dataclass(frozen=True)
class Cap:
    """The most bytes a route's body may have, and the 413 (given the bytes declared)."""

    limit: int
    error: Callable[[int | None], APIError]


def body_caps(settings: Settings) -> dict[str, Cap]:
    """The caps every door shares, by path: uploads (plus form overhead) and JSON bodies. A
    slice with a limit of its own (a stored file, a WebRTC offer) adds its cap (`app.py`)."""
    upload_limit, json_limit = settings.upload_bytes, settings.json_bytes
    upload = Cap(upload_limit + FORM_OVERHEAD, lambda seen: too_large(upload_limit, seen))
    json = Cap(json_limit, lambda seen: json_too_large(json_limit, seen))
    return {**dict.fromkeys(UPLOAD_PATHS, upload), **dict.fromkeys(JSON_PATHS, json)}


class BodyLimit:
    """ASGI middleware: a body over its path's cap is a 413; paths without a cap pass."""

    def __init__(self, app: ASGIApp, caps: Mapping[str, Cap]) -> None:
        self.app = app
        self.caps = dict(caps)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cap = self.caps.get(scope["path"]) if scope["type"] == "http" else None
        if cap is None:
            await self.app(scope, receive, send)
            return
        declared = content_length(scope["headers"])
        received = 0

        async def limited() -> Message:
            nonlocal received
            if declared is not None and declared > cap.limit:
                raise cap.error(declared)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap.limit:
                    raise cap.error(None)
            return message

        await self.app(scope, limited, send)


def content_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The Content-Length a request declared; None without one (or one that is not a number)."""
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
