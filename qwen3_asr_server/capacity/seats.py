"""How many Realtime sessions (`--max-sessions`), and Wyoming connections
(`--wyoming-max-connections`), may be open at once, over the whole server.

A session may hold up to 600 s of audio and runs VAD on every frame it gets (about 1% of a
core each): without a bound, enough of them crowd out the CPU vLLM and the uploads need. A
handshake over the limit is refused before it is accepted: a 429 with `Retry-After`, or a
close with 1013 (try again later) where the server cannot answer a handshake over HTTP.
A Wyoming connection has no authentication and holds a descriptor and its buffers: one over
the limit is closed as soon as it is accepted (`entrypoints.wyoming.listener`). Both are counted
alike, each `Kind` by itself: in this process (`LocalSeats`), or with `--workers N` in the table the
workers share (`capacity.shared.SharedSeats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from prometheus_client import Gauge

from ..errors import APIError
from ..observability.metrics import Metrics

RETRY_AFTER_SECONDS = 5


@dataclass(frozen=True)
class Kind:
    """What seats are counted for: the column of the workers' table that holds each worker's
    count (`capacity.table`), the gauge that shows it, the reason `qwen3_asr_rejected_total`
    counts a refusal under, and the words a refusal says."""

    column: str
    gauge: str  # the Metrics attribute
    reason: str
    what: str
    flag: str

    def shown(self, metrics: Metrics) -> Gauge:
        gauge: Gauge = getattr(metrics, self.gauge)
        return gauge


REALTIME = Kind(
    "sessions", "realtime_sessions", "session_limit", "Realtime sessions", "--max-sessions"
)
WYOMING = Kind(
    "wyoming",
    "wyoming_connections",
    "wyoming_connection_limit",
    "Wyoming connections",
    "--wyoming-max-connections",
)


class Seats(Protocol):
    """What a session (a connection) takes before it is accepted and gives back when it ends:
    `LocalSeats`, or with `--workers N` the one shared by the workers
    (`capacity.shared.SharedSeats`)."""

    def take(self) -> None: ...
    def leave(self) -> None: ...


def refused(message: str, reason: str, metrics: Metrics) -> APIError:
    """A session refused for want of a seat: OpenAI's 429 with `Retry-After`, counted in
    `qwen3_asr_rejected_total` under `reason`."""
    metrics.rejected.labels(reason=reason).inc()
    return APIError(
        429,
        message,
        type="requests",
        code="session_limit_reached",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def full(limit: int, metrics: Metrics, kind: Kind = REALTIME) -> APIError:
    message = f"The server has {limit} {kind.what} open, as many as it allows ({kind.flag}); "
    return refused(message + "retry after a moment.", kind.reason, metrics)


class LocalSeats:
    """At most `limit` of `kind` open in this, the one server process."""

    def __init__(self, limit: int, metrics: Metrics, kind: Kind = REALTIME) -> None:
        self.limit = limit
        self.metrics = metrics
        self.kind = kind
        self.taken = 0

    def take(self) -> None:
        if self.taken >= self.limit:
            raise full(self.limit, self.metrics, self.kind)
        self.taken += 1
        self.kind.shown(self.metrics).set(self.taken)

    def leave(self) -> None:
        self.taken -= 1
        self.kind.shown(self.metrics).set(self.taken)
