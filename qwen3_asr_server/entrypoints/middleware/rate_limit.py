"""A key's `requests_per_minute` (`--keys-file`), held across the workers: OpenAI's three
`x-ratelimit-*-requests` headers on every answer to that key, and past the limit its 429
`rate_limit_exceeded` with `Retry-After`, before the request's body is read (counted in
`qwen3_asr_rejected_total{reason="rate_limit"}`). A WebSocket
handshake is a request like any other; a batch's lines are not requests and count for nothing.
Keys without a limit, and servers without keys, pay one dictionary lookup.
"""

from __future__ import annotations

import math
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...capacity.rates import Rates, Verdict, shown
from ...errors import APIError
from ...observability.metrics import Metrics
from .auth import caller
from .errors import send_error


def headers(verdict: Verdict) -> list[tuple[bytes, bytes]]:
    """OpenAI's headers for a key's requests: its limit, what is left, when it is full again."""
    return [
        (b"x-ratelimit-limit-requests", str(verdict.limit).encode()),
        (b"x-ratelimit-remaining-requests", str(verdict.remaining).encode()),
        (b"x-ratelimit-reset-requests", shown(verdict.reset).encode()),
    ]


def refusal(key_name: str, verdict: Verdict) -> APIError:
    wait = verdict.retry_after
    return APIError(
        429,
        f"Rate limit reached for requests: the key {key_name!r} may send {verdict.limit} per "
        f"minute. Try again in {shown(wait)}.",
        type="requests",
        code="rate_limit_exceeded",
        headers={
            "Retry-After": str(max(1, math.ceil(wait))),
            **{name.decode(): value.decode() for name, value in headers(verdict)},
        },
    )


class RateLimit:
    """ASGI middleware, inside `Authentication` (it reads the key that found)."""

    def __init__(self, app: ASGIApp, rates: Rates, metrics: Metrics) -> None:
        self.app = app
        self.rates = rates
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = caller(scope) if scope["type"] in ("http", "websocket") else None
        if key is None or key.requests_per_minute is None:
            await self.app(scope, receive, send)
            return
        verdict = self.rates.take(key.name, key.requests_per_minute, time.time())
        if not verdict.allowed:
            self.metrics.rejected.labels(reason="rate_limit").inc()
            await send_error(refusal(key.name, verdict), scope, receive, send)
            return
        extra = headers(verdict)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)
