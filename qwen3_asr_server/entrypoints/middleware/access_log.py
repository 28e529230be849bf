"""One access-log line per request.

The line names the route template (never the raw path, which may hold ids), so it stays
greppable and bounded; the request id ties it to the `x-request-id` the client got and to
the upstream request. Audio and transcript text are never logged here: they are the users' data
(`--log-transcripts` has the transcription service log them).
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from ...observability.log_format import FIELDS
from .metrics import call_observed

logger = logging.getLogger("qwen3_asr_server.access")

AUDIO_SECONDS = "audio_seconds"  # key a route sets on request.state: decoded audio length


class AccessLogMiddleware:
    """ASGI middleware: `request_id method path status duration_ms [audio_s]` at INFO.

    It must sit inside the request-id middleware (which puts the id on the scope's state)
    and outside the error guard (so an unexpected error is logged as the 500 it becomes).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await call_observed(
            self.app,
            scope,
            receive,
            send,
            lambda status, seconds: _log(scope, status, seconds),
        )


def _log(scope: Scope, status: int, seconds: float) -> None:
    state = scope.get("state") or {}
    path = getattr(scope.get("route"), "path", "unmatched")
    line = "request_id=%s method=%s path=%s status=%d duration_ms=%.1f"
    args: list[object] = [state.get("request_id", "-"), scope["method"], path, status]
    args.append(seconds * 1000)
    fields = {"method": scope["method"], "path": path, "status": status}
    fields["duration_ms"] = round(seconds * 1000, 1)
    audio = state.get(AUDIO_SECONDS)
    if isinstance(audio, int | float):
        line += " audio_s=%.2f"
        args.append(audio)
        fields["audio_s"] = round(audio, 2)
    logger.info(line, *args, extra={FIELDS: fields})  # the JSON lines' fields
