"""Admission (see `capacity.admission`), Realtime seats (`capacity.seats`) and the audio
budget's count (`capacity.budget`) whose limits hold for all the workers together.

Each worker keeps its counts in its own entry of the shared table; taking a slot sums every
entry under the table's lock, so at most `limit` requests are in flight to vLLM and at most
`max_queue` wait, whichever workers they came to. A request that arrives while others wait
queues behind them, and they are served in the order they came, across the workers: each
worker's waiting requests line up behind one another, and the first of its line takes a free
slot only when no other worker's first has waited longer. It takes a slot its own worker frees
at once, and looks for one freed by another worker every `POLL` seconds, as no signal crosses
the processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from ..observability.metrics import Metrics
from .admission import BACKGROUND, BACKGROUND_POLL, background_room, busy
from .seats import REALTIME, Kind, full
from .table import Table

POLL = 0.005  # seconds; what a slot freed in another worker may stay unused at most


class SharedAdmission:
    def __init__(
        self,
        table: Table,
        index: int,
        limit: int,
        max_queue: int,
        timeout: float,
        metrics: Metrics,
    ) -> None:
        self.table = table
        self.limit = limit
        self.max_queue = max_queue
        self.timeout = timeout
        self.metrics = metrics
        self._mine = table.worker(index)
        self._line = asyncio.Lock()  # asyncio's locks wake their waiters in order
        self._freed = asyncio.Event()

    @property
    def taken(self) -> int:
        """Slots this worker holds."""
        return int(self._mine.taken)

    @property
    def waiting(self) -> int:
        """This worker's requests in line."""
        return int(self._mine.waiting)

    def spare(self) -> bool:
        """Room for background work: no request of any worker waits for a slot, and one is
        free beyond those kept for interactive requests (`admission.background_room`)."""
        with self.table.locked():
            taken, waiting = self.table.totals()
        return waiting == 0 and taken < background_room(self.limit)

    async def acquire(self) -> None:
        """Take a slot, waiting in line if need be; a 429 when the line is full or too slow.
        Background work waits, without a limit, until a slot is spare in the whole server."""
        if BACKGROUND.get():
            await self._spare()
            return
        with self.table.locked():
            taken, waiting = self.table.totals()
            queued = taken >= self.limit or waiting > 0
            if queued and waiting >= self.max_queue:
                self.metrics.rejected.labels(reason="queue_full").inc()
                raise busy(f"{waiting} requests already waiting")
            if queued:
                self._mine.waiting += 1
            else:
                self._mine.taken += 1
        if queued and not await self._wait():
            self.metrics.rejected.labels(reason="queue_timeout").inc()
            raise busy(f"no slot free within {self.timeout:.0f} s")
        self._show()

    async def _spare(self) -> None:
        while True:
            with self.table.locked():
                taken, waiting = self.table.totals()
                if waiting == 0 and taken < background_room(self.limit):
                    self._mine.taken += 1
                    break
            await asyncio.sleep(BACKGROUND_POLL)
        self._show()

    async def _wait(self) -> bool:
        """Wait in line for a slot: True once taken, False when `timeout` ran out first."""
        self._show()
        since = time.monotonic_ns()
        taken = first = False

        async def turn() -> None:
            nonlocal taken, first
            async with self._line:
                first = True
                self._mine.head = since
                while True:
                    self._freed.clear()
                    with self.table.locked():
                        if self.table.totals()[0] < self.limit and self.table.first_in_line(since):
                            self._mine.taken += 1
                            self._mine.waiting -= 1
                            self._mine.head = 0
                            taken = True
                            return
                    # asyncio.timeout, not wait_for, here and below: see Admission.acquire
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(POLL):
                            await self._freed.wait()

        try:
            async with asyncio.timeout(self.timeout):
                await turn()
        except TimeoutError:
            pass
        except BaseException:  # cancelled: the client left
            if taken:
                self.release()
            raise
        finally:
            if not taken:
                with self.table.locked():
                    self._mine.waiting -= 1
                    if first:
                        self._mine.head = 0
                self._show()
        return taken

    def release(self) -> None:
        with self.table.locked():
            self._mine.taken -= 1
        self._freed.set()
        self._show()

    def _show(self) -> None:
        """This worker's share of the gauges; /metrics sums the workers' (livesum)."""
        self.metrics.upstream_in_flight.set(self._mine.taken)
        self.metrics.queue_depth.set(self._mine.waiting)


class SharedSeats:
    """`capacity.seats.LocalSeats` for all the workers together: at most `limit` Realtime
    sessions (or Wyoming connections, by `kind`) open over the whole server, whichever
    workers they came to."""

    def __init__(
        self, table: Table, index: int, limit: int, metrics: Metrics, kind: Kind = REALTIME
    ) -> None:
        self.table = table
        self.limit = limit
        self.metrics = metrics
        self.kind = kind
        self._mine = table.worker(index)

    def take(self) -> None:
        column = self.kind.column
        with self.table.locked():
            if self.table.seats(column) >= self.limit:
                raise full(self.limit, self.metrics, self.kind)
            setattr(self._mine, column, getattr(self._mine, column) + 1)
        self._show()

    def leave(self) -> None:
        column = self.kind.column
        with self.table.locked():
            setattr(self._mine, column, getattr(self._mine, column) - 1)
        self._show()

    def _show(self) -> None:
        """This worker's share of the gauge; /metrics sums the workers' (livesum)."""
        self.kind.shown(self.metrics).set(getattr(self._mine, self.kind.column))


class SharedLedger:
    """`capacity.budget.LocalLedger` for all the workers together: each worker's
    reservations in its entry of the table, summed under the table's lock."""

    def __init__(self, table: Table, index: int) -> None:
        self.table = table
        self._mine = table.worker(index)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return self.table.locked()

    def total(self) -> int:
        return self.table.audio()

    def mine(self) -> int:
        return int(self._mine.audio)

    def add(self, samples: int) -> None:
        self._mine.audio += samples

    def first_in_line(self, since: int) -> bool:
        return self.table.first_in_line(since, "audio_head")

    def set_head(self, since: int) -> None:
        self._mine.audio_head = since
