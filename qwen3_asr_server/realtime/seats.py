"""How many Realtime sessions may be open at once, over the whole server (`--max-sessions`).

A session may hold up to 600 s of audio and runs VAD on every frame it gets (about 1% of a
core each): without a bound, enough of them crowd out the CPU vLLM and the uploads need. A
handshake over the limit is refused before it is accepted: a 429 with `Retry-After`, or a
close with 1013 (try again later) where the server cannot answer a handshake over HTTP.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import APIError
from ..metrics import Metrics

RETRY_AFTER_SECONDS = 5


class Seats(Protocol):
    """What a session takes before its handshake is accepted and gives back when it ends:
    `LocalSeats`, or with `--workers N` the one shared by the workers
    (`workers.admission.SharedSeats`)."""

    def take(self) -> None: ...
    def leave(self) -> None: ...


def full(limit: int, metrics: Metrics) -> APIError:
    metrics.rejected.labels(reason="session_limit").inc()
    return APIError(
        429,
        f"The server has {limit} Realtime sessions open, as many as it allows "
        "(--max-sessions); retry after a moment.",
        type="requests",
        code="session_limit_reached",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


class LocalSeats:
    """At most `limit` sessions open in this, the one server process."""

    def __init__(self, limit: int, metrics: Metrics) -> None:
        self.limit = limit
        self.metrics = metrics
        self.taken = 0

    def take(self) -> None:
        if self.taken >= self.limit:
            raise full(self.limit, self.metrics)
        self.taken += 1
        self.metrics.realtime_sessions.set(self.taken)

    def leave(self) -> None:
        self.taken -= 1
        self.metrics.realtime_sessions.set(self.taken)
