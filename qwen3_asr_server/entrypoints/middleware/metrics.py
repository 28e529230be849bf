"""Count every HTTP request in the metrics, under its route template (bounded label values)."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...observability.metrics import Metrics
from .auth import caller

_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


async def call_observed(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    done: Callable[[int, float], None],
) -> None:
    """Run `app`; then tell `done` the status the client got and the seconds it took."""
    status = 500  # what the client sees if an error escapes before an answer started

    async def send_recording(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    start = time.perf_counter()
    try:
        await app(scope, receive, send_recording)
    finally:
        done(status, time.perf_counter() - start)


class MetricsMiddleware:
    """Counts every HTTP request under its route template (bounded label values)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        def count(status: int, seconds: float) -> None:
            self.metrics.in_flight.dec()
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            path = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.requests.labels(method, path, str(status)).inc()
            self.metrics.duration.labels(method, path).observe(seconds)
            key = caller(scope)  # set by the keys' middleware, inside this one
            if key is not None:
                self.metrics.key_requests.labels(key=key.name).inc()

        self.metrics.in_flight.inc()
        await call_observed(self.app, scope, receive, send, count)
