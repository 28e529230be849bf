"""A request cancelled as it waits for a slot: whatever the moment, it ends holding none; and
background work (batch lines) served only when no one waits."""

from __future__ import annotations

import asyncio

import pytest

from qwen3_asr_server.capacity.admission import BACKGROUND, Admission
from qwen3_asr_server.observability.metrics import Metrics


@pytest.mark.parametrize("turns", range(4))
async def test_a_request_cancelled_as_its_slot_frees_takes_nothing(turns: int) -> None:
    """The slot is given back and the waiter cancelled `turns` loop turns apart: a waiter
    still pending when cancelled ends cancelled, and only one that got its slot first keeps
    it (on 3.11 `wait_for` returned the slot to a cancelled waiter, which then went on to the
    backend and held its upload's answer back)."""
    admission = Admission(limit=1, max_queue=4, timeout=5.0, metrics=Metrics())
    await admission.acquire()
    waiter = asyncio.create_task(admission.acquire())
    await asyncio.sleep(0)
    admission.release()
    for _ in range(turns):
        await asyncio.sleep(0)
    pending = waiter.cancel()
    await asyncio.wait([waiter])
    assert waiter.cancelled() == pending
    assert admission.taken == (0 if pending else 1)
    assert admission.waiting == 0
    if pending:
        await asyncio.wait_for(admission.acquire(), 1)  # the slot went back, to the next one


async def _in_background(admission: Admission) -> None:
    BACKGROUND.set(True)  # this task's context only, as the batch runner sets it
    await admission.acquire()


async def test_background_work_takes_a_slot_only_when_no_one_waits() -> None:
    """A batch line's request waits behind every interactive one, even those that came after
    it, and never gets a 429 for waiting (it has no client to keep waiting)."""
    admission = Admission(limit=1, max_queue=4, timeout=0.5, metrics=Metrics())
    await admission.acquire()
    batch = asyncio.create_task(_in_background(admission))
    await asyncio.sleep(0.1)
    interactive = asyncio.create_task(admission.acquire())
    await asyncio.sleep(0)
    admission.release()
    await asyncio.wait_for(interactive, 1)
    await asyncio.sleep(0.6)  # past the interactive timeout: the batch request still waits
    assert not batch.done()
    admission.release()
    await asyncio.wait_for(batch, 1)
    assert admission.taken == 1
    assert not BACKGROUND.get()


async def test_background_work_leaves_a_slot_for_the_next_interactive_request() -> None:
    admission = Admission(limit=4, max_queue=4, timeout=0.5, metrics=Metrics())
    held = [asyncio.create_task(_in_background(admission)) for _ in range(4)]
    await asyncio.sleep(0.2)
    assert sum(task.done() for task in held) == 3  # one slot kept for interactive requests
    await asyncio.wait_for(admission.acquire(), 0.1)  # at once, not after a batch piece
    assert admission.taken == 4
    for task in held:
        task.cancel()
