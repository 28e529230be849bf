"""Upload size limits, enforced while the body streams in, before any of it is parsed.

A client that declares a body over the limit (`Content-Length`) is refused before a byte is
read; one that streams without declaring it is cut off at the limit. Either way the answer is
OpenAI's 413, and memory holds no more than the limit, spooled to disk by the form parser.
"""

from __future__ import annotations

from starlette.datastructures import UploadFile
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import APIError

MIB = 1 << 20
FORM_OVERHEAD = MIB  # room for the other form fields and the multipart framing
UPLOAD_PATHS = ("/v1/audio/transcriptions", "/v1/audio/translations")


def too_large(limit: int, seen: int | None = None) -> APIError:
    read = f" ({seen} bytes sent)" if seen is not None else ""
    return APIError(
        413,
        f"Maximum upload size exceeded: the audio file may be at most {limit // MIB} MB{read} "
        "(--max-upload-mb). Compress it (e.g. to Opus or MP3) or split it.",
        param="file",
        code="file_too_large",
        headers={"Connection": "close"},  # do not read the rest of the body to reuse it
    )


def check_upload(upload: UploadFile, limit: int) -> None:
    """The file part alone, once parsed, must also fit."""
    if upload.size is not None and upload.size > limit:
        raise too_large(limit, upload.size)


class BodyLimit:
    """ASGI middleware: bodies of upload routes over `file_limit` + form overhead are a 413."""

    def __init__(self, app: ASGIApp, file_limit: int) -> None:
        self.app = app
        self.file_limit = file_limit
        self.body_limit = file_limit + FORM_OVERHEAD

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in UPLOAD_PATHS:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        received = 0

        async def limited() -> Message:
            nonlocal received
            if declared is not None and declared > self.body_limit:
                raise too_large(self.file_limit, declared)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.body_limit:
                    raise too_large(self.file_limit)
            return message

        await self.app(scope, limited, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
