"""What uses a backend, and whether it sleeps: where requests and `--idle-sleep` meet.

Every use of a backend (a request to its vLLM, an open Realtime session, a Wyoming
transcription) `enter`s before it and `leave`s after. The sleeper (`backend.sleep`) puts the
backend to sleep only through `doze`, which succeeds only while nothing uses it and it has
been idle long enough; a use that enters while the backend dozes, sleeps or wakes waits in
`awake` until it is awake again, and its waiting is what asks for the wake. `doze` and `enter`
never interleave: in one process they are plain code on one event loop; across `--workers N`
both hold the shared table's lock (`serving.shared_activity`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from prometheus_client import Histogram

from ..observability.tracing import OFF, Tracing
from .failures import BackendGone

AWAKE, DOZING, ASLEEP, WAKING = 0, 1, 2, 3
POLL = 0.02  # seconds between looks of a waiting request at the backend's state


class Activity(Protocol):
    @property
    def state(self) -> int: ...  # AWAKE, DOZING (falling asleep), ASLEEP or WAKING
    def enter(self) -> None: ...
    def leave(self) -> None: ...
    # the sleeper's side
    def idle(self) -> float | None: ...  # seconds since the last use ended; None while one runs
    def doze(self, after: float) -> bool: ...  # AWAKE to DOZING, idle `after` s and unused
    def wanted(self) -> bool: ...  # a use runs or waits
    def settle(self, state: int) -> None: ...  # the sleeper's next state; AWAKE: idle anew


class LocalActivity:
    """The activity of a backend whose every user is in this process."""

    def __init__(self) -> None:
        self.state = AWAKE
        self._using = 0
        self._used = time.monotonic()

    def enter(self) -> None:
        self._using += 1

    def leave(self) -> None:
        self._using -= 1
        self._used = time.monotonic()

    def idle(self) -> float | None:
        return None if self._using else time.monotonic() - self._used

    def doze(self, after: float) -> bool:
        idle = self.idle()
        if self.state != AWAKE or idle is None or idle < after:
            return False
        self.state = DOZING
        return True

    def wanted(self) -> bool:
        return self._using > 0

    def settle(self, state: int) -> None:
        """The sleeper's next state. Awake, the backend is idle from now rather than since its
        last use: a request that gave up on a slow wake (--wake-timeout) left before the
        wake ended, and its retry would otherwise find the backend put back to sleep."""
        self.state = state
        if state == AWAKE:
            self._used = time.monotonic()


async def awake(
    activity: Activity,
    patience: float,
    what: str,
    waits: Histogram | None = None,
    tracing: Tracing = OFF,
) -> None:
    """After `activity.enter()`: wait until the backend is awake; the wait, if there was one,
    observed in `waits` (a request's: part of its latency) and begun with an event on the
    current span. A wake that takes longer than `patience` is a 503 with `Retry-After` naming
    `what`."""
    if activity.state == AWAKE:
        return
    tracing.event("engine asleep: waiting for its wake")
    began = time.monotonic()
    while activity.state != AWAKE:
        if time.monotonic() - began > patience:
            raise BackendGone(
                f"{what} was asleep and did not wake within {patience:.0f} s (--wake-timeout); "
                "retry shortly."
            )
        await asyncio.sleep(POLL)
    if waits is not None:
        waits.observe(time.monotonic() - began)
