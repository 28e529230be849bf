"""A SERVER span for every HTTP request and every WebSocket session (tracing on only): the
trace a client's `traceparent` names continued, else a new one; named by the route template
once the router found it (`POST /v1/audio/transcriptions`), with OpenTelemetry's HTTP
attributes and this server's own: the request id the client got as `x-request-id`, the key's
name, the seconds of audio. Probes and scrapes (`/health`, `/livez`, `/metrics`) are not
traced. It sits inside the request-id middleware (the id is known) and
outside the access log, whose line then carries the trace."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...observability.tracing import Span, Tracing
from .access_log import AUDIO_SECONDS
from .auth import caller
from .drain import OPEN_PATHS

_PROPAGATED = frozenset({b"traceparent", b"tracestate"})


class TraceRequests:
    def __init__(self, app: ASGIApp, tracing: Tracing) -> None:
        self.app = app
        self.tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)  # probes and scrapes: a trace each would bury
            return
        method = scope["method"] if scope["type"] == "http" else "GET"
        attributes = {
            "http.request.method": method,
            "url.path": scope["path"],
            "url.scheme": scope.get("scheme", "http"),
            "network.protocol.name": "websocket" if scope["type"] == "websocket" else "http",
        }
        carrier = {}
        for name, value in scope["headers"]:
            if name in _PROPAGATED:
                carrier[name.decode("latin-1")] = value.decode("latin-1")
            elif name == b"user-agent":
                attributes["user_agent.original"] = value.decode("latin-1")[:256]
        with self.tracing.span(method, "server", attributes, carrier=carrier) as span:

            async def send_observed(message: Message) -> None:
                if message["type"] in ("http.response.start", "websocket.http.response.start"):
                    _status(span, message["status"])
                elif message["type"] == "websocket.accept":
                    _status(span, 101)
                await send(message)

            try:
                await self.app(scope, receive, send_observed)
            finally:
                _finished(span, scope, method)


def _status(span: Span, status: int) -> None:
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_attribute("error.type", str(status))


def _finished(span: Span, scope: Scope, method: str) -> None:
    """What is known once the request is answered: its route, its id, whose it was."""
    route = getattr(scope.get("route"), "path", None)
    if route is not None:
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)
    state = scope.get("state") or {}
    if "request_id" in state:
        span.set_attribute("qwen3_asr.request_id", state["request_id"])
    audio = state.get(AUDIO_SECONDS)
    if isinstance(audio, int | float):
        span.set_attribute("qwen3_asr.audio_seconds", round(audio, 3))
    key = caller(scope)
    if key is not None:
        span.set_attribute("qwen3_asr.key", key.name)
