"""The admission limits shared by worker processes: two `SharedAdmission`s on one table stand
for two workers (each process maps the same file; here one process maps it twice)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from qwen3_asr_server.capacity.admission import BACKGROUND
from qwen3_asr_server.capacity.shared import POLL, SharedAdmission
from qwen3_asr_server.capacity.table import FILE_NAME, Table
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.observability.metrics import Metrics


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Table, Table]:
    main = Table.create(tmp_path, workers=2)
    worker = Table(tmp_path / FILE_NAME, workers=2)  # a second mapping, as a worker has
    return main, worker


def pair(
    table: Table, limit: int, queue: int, timeout: float = 5.0
) -> tuple[SharedAdmission, SharedAdmission]:
    return (
        SharedAdmission(table, 0, limit, queue, timeout, Metrics()),
        SharedAdmission(table, 1, limit, queue, timeout, Metrics()),
    )


async def refused(admission: SharedAdmission) -> APIError:
    with pytest.raises(APIError) as error:
        await admission.acquire()
    return error.value


async def settle() -> None:
    await asyncio.sleep(POLL * 4)


async def test_the_limit_and_the_line_hold_across_workers(tables: tuple[Table, Table]) -> None:
    main, table = tables
    first, second = pair(table, limit=2, queue=1)
    await first.acquire()
    await second.acquire()
    waiter = asyncio.create_task(first.acquire())  # the third request: in line
    await settle()
    assert (first.waiting, main.totals()) == (1, (2, 1))
    full = await refused(second)  # the line, shared, is full
    assert (full.status, full.code, full.headers["Retry-After"]) == (
        429,
        "rate_limit_exceeded",
        "1",
    )
    assert "1 requests already waiting" in full.message
    second.release()  # freed by the other worker: found within POLL
    await asyncio.wait_for(waiter, 1)
    assert (first.taken, second.taken, main.totals()) == (2, 0, (2, 0))
    rejected = second.metrics.registry.get_sample_value(
        "qwen3_asr_rejected_total", {"reason": "queue_full"}
    )
    assert rejected == 1


async def test_a_newcomer_does_not_pass_those_in_line(tables: tuple[Table, Table]) -> None:
    _, table = tables
    first, second = pair(table, limit=1, queue=4)
    await first.acquire()
    waiter = asyncio.create_task(second.acquire())
    await settle()
    first.release()
    newcomer = asyncio.create_task(first.acquire())  # the slot is free, but one waits
    await asyncio.wait_for(waiter, 1)
    await settle()
    assert not newcomer.done()
    assert (first.waiting, second.taken) == (1, 1)
    second.release()
    await asyncio.wait_for(newcomer, 1)
    assert first.taken == 1


async def test_waiting_too_long_is_a_429_and_leaves_the_line(tables: tuple[Table, Table]) -> None:
    main, table = tables
    first, second = pair(table, limit=1, queue=4, timeout=0.1)
    await first.acquire()
    late = await refused(second)
    assert late.status == 429
    assert "no slot free within" in late.message
    assert main.totals() == (1, 0)
    metric = second.metrics.registry.get_sample_value(
        "qwen3_asr_rejected_total", {"reason": "queue_timeout"}
    )
    assert metric == 1


async def test_a_client_that_leaves_the_line_takes_nothing(tables: tuple[Table, Table]) -> None:
    main, table = tables
    first, second = pair(table, limit=1, queue=4)
    await first.acquire()
    waiter = asyncio.create_task(second.acquire())
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert main.totals() == (1, 0)
    first.release()
    await second.acquire()
    assert main.totals() == (1, 0)
    second.release()
    assert main.totals() == (0, 0)


async def test_a_dead_workers_slots_and_line_are_forgotten(tables: tuple[Table, Table]) -> None:
    main, table = tables
    first, second = pair(table, limit=2, queue=4)
    await first.acquire()
    await first.acquire()
    stuck = asyncio.create_task(first.acquire())
    await settle()
    stuck.cancel()  # its process dies: nothing it would have done in `finally` happens...
    main.forget(0)  # ...so the main process clears its entry
    assert main.totals() == (0, 0)
    await asyncio.wait_for(second.acquire(), 1)
    assert (second.taken, main.totals()[0]) == (1, 1)


async def test_the_gauges_show_each_workers_share(tables: tuple[Table, Table]) -> None:
    _, table = tables
    first, second = pair(table, limit=1, queue=4)
    await first.acquire()
    waiter = asyncio.create_task(second.acquire())
    await settle()
    gauges = second.metrics.registry.get_sample_value
    assert (gauges("qwen3_asr_queue_depth"), gauges("qwen3_asr_upstream_in_flight")) == (1, 0)
    first.release()
    await asyncio.wait_for(waiter, 1)
    assert (gauges("qwen3_asr_queue_depth"), gauges("qwen3_asr_upstream_in_flight")) == (0, 1)


@pytest.mark.parametrize("turns", range(4))
async def test_a_client_cancelled_as_a_slot_frees_ends_holding_none(
    tables: tuple[Table, Table], turns: int
) -> None:
    """As `Admission`'s: a waiter still pending when cancelled ends cancelled, with no slot."""
    first, second = pair(tables[0], limit=1, queue=4)
    await first.acquire()
    waiter = asyncio.create_task(second.acquire())
    await settle()
    first.release()
    for _ in range(turns):
        await asyncio.sleep(0)
    pending = waiter.cancel()
    await asyncio.wait([waiter])
    assert waiter.cancelled() == pending
    assert tables[0].totals()[0] == (0 if pending else 1)


async def _in_background(admission: SharedAdmission) -> None:
    BACKGROUND.set(True)  # this task's context only, as the batch runner sets it
    await admission.acquire()


async def test_background_work_waits_for_every_workers_line(tables: tuple[Table, Table]) -> None:
    _, table = tables
    first, second = pair(table, limit=1, queue=2, timeout=0.5)
    await first.acquire()
    batch = asyncio.create_task(_in_background(first))
    await settle()
    interactive = asyncio.create_task(second.acquire())  # another worker's, come later
    await settle()
    first.release()
    await asyncio.wait_for(interactive, 1)
    await asyncio.sleep(0.6)  # past the interactive timeout: the batch request still waits
    assert not batch.done()
    second.release()
    await asyncio.wait_for(batch, 1)
    assert (first.taken, second.taken) == (1, 0)
