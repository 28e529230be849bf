"""Admission control: how many requests vLLM works on at once, and how many may wait.

Past vLLM's own batch (`--max-num-seqs`) extra requests only queue inside vLLM, where no one
can see or bound them. Here they wait in a bounded line instead; one that cannot get a slot
in time, or finds the line full, gets OpenAI's 429 with `Retry-After`, which the SDK honours.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextvars import ContextVar
from typing import Protocol

from ..errors import APIError
from ..observability.metrics import Metrics

DEFAULT_LIMIT = 64
RETRY_AFTER_SECONDS = 1
BACKGROUND_POLL = 0.05  # seconds between a background request's looks for a spare slot
# Set for work that can wait (a batch line): its requests take a slot only while one is free
# and no other request waits, so interactive requests are always served first.
BACKGROUND: ContextVar[bool] = ContextVar("background", default=False)


def background_room(limit: int) -> int:
    """The slots background work may hold at once: all but a sixteenth (at least one, and
    one is left to it), kept free so that an interactive request that comes finds one at
    once instead of waiting for a batch's piece to end (scripts/batch_latency.py: with every
    slot to the batch its 95th percentile was 1.9x the idle one)."""
    return max(1, limit - max(1, limit // 16))


class AdmissionSettings(Protocol):
    """What the limit is read from: `--max-concurrent` (`settings.limits`), else
    `--max-num-seqs` (`settings.engine`)."""

    max_concurrent: int | None
    max_num_seqs: int | None


def limit_of(settings: AdmissionSettings) -> int:
    """Requests to vLLM in flight at once, for the whole server."""
    return settings.max_concurrent or settings.max_num_seqs or DEFAULT_LIMIT


class Slots(Protocol):
    """What requests take and give back: `Admission`, or with `--workers N` the one shared by
    the worker processes (`capacity.shared.SharedAdmission`)."""

    @property
    def taken(self) -> int: ...
    def spare(self) -> bool: ...
    async def acquire(self) -> None: ...
    def release(self) -> None: ...


def busy(reason: str) -> APIError:
    return APIError(
        429,
        f"The server is at capacity ({reason}); retry after a moment.",
        type="requests",
        code="rate_limit_exceeded",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


class Admission:
    """At most `limit` slots taken; at most `max_queue` waiting, each for `timeout` seconds."""

    def spare(self) -> bool:
        """Room for work that can wait (batches): no one waits for a slot, and one is free
        beyond those kept for interactive requests."""
        return self.waiting == 0 and self.taken < background_room(self.limit)

    def __init__(self, limit: int, max_queue: int, timeout: float, metrics: Metrics) -> None:
        self.limit = limit
        self.max_queue = max_queue
        self.timeout = timeout
        self.metrics = metrics
        self.waiting = 0
        self.taken = 0
        self._free = asyncio.Semaphore(limit)
        self._released = asyncio.Event()

    async def acquire(self) -> None:
        """Take a slot, waiting in line if need be; a 429 when the line is full or too slow.
        Background work waits, without a limit, until a slot is spare."""
        if BACKGROUND.get():
            while not self.spare():
                self._released.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(BACKGROUND_POLL):
                        await self._released.wait()
            await self._free.acquire()  # free at once: nothing awaited since spare()
        elif self._free.locked() or self.waiting:
            if self.waiting >= self.max_queue:
                self.metrics.rejected.labels(reason="queue_full").inc()
                raise busy(f"{self.waiting} requests already waiting")
            self._set_waiting(+1)
            try:
                # not wait_for: on 3.11 it swallows a cancel that comes as the slot is given,
                # and the cancelled request then goes on to the backend
                async with asyncio.timeout(self.timeout):
                    await self._free.acquire()
            except TimeoutError:
                self.metrics.rejected.labels(reason="queue_timeout").inc()
                raise busy(f"no slot free within {self.timeout:.0f} s") from None
            finally:
                self._set_waiting(-1)
        else:
            await self._free.acquire()
        self.taken += 1
        self.metrics.upstream_in_flight.set(self.taken)

    def release(self) -> None:
        self.taken -= 1
        self.metrics.upstream_in_flight.set(self.taken)
        self._free.release()
        self._released.set()

    def _set_waiting(self, change: int) -> None:
        self.waiting += change
        self.metrics.queue_depth.set(self.waiting)
