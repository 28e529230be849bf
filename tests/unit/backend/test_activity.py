"""A backend's activity: `doze` (the sleeper's decision) never wins over a use that entered,
in one process and across workers, and a request waits for the wake within its patience."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Histogram

from qwen3_asr_server.backend.activity import (
    ASLEEP,
    AWAKE,
    DOZING,
    WAKING,
    Activity,
    LocalActivity,
    awake,
)
from qwen3_asr_server.backend.failures import BackendGone
from qwen3_asr_server.backend.roles import ALIGNER, ASR
from qwen3_asr_server.capacity.table import FILE_NAME, Table
from qwen3_asr_server.serving.shared_activity import SharedActivity


def shared(tmp_path: Path) -> tuple[SharedActivity, SharedActivity, SharedActivity]:
    """The main process's view of the ASR backend's activity, and two workers'."""
    main = Table.create(tmp_path, workers=2)
    workers = [Table(tmp_path / FILE_NAME, workers=2) for _ in range(2)]
    return (
        SharedActivity(main, ASR, None),
        SharedActivity(workers[0], ASR, 0),
        SharedActivity(workers[1], ASR, 1),
    )


def test_a_use_that_entered_keeps_the_backend_awake(tmp_path: Path) -> None:
    local = LocalActivity()
    main, first, _ = shared(tmp_path)
    for sleeper, user in ((local, local), (main, first)):
        user.enter()
        assert sleeper.idle() is None
        assert sleeper.wanted()
        assert not sleeper.doze(0)
        assert sleeper.state == AWAKE
        user.leave()
        assert sleeper.doze(0)
        assert sleeper.state == DOZING
        assert first.state == DOZING or sleeper is local


def test_doze_waits_for_the_idle_time_after_the_last_use(tmp_path: Path) -> None:
    main, first, second = shared(tmp_path)
    first.enter()
    second.enter()
    first.leave()
    assert main.idle() is None  # the second worker still uses it
    second.leave()
    idle = main.idle()
    assert idle is not None
    assert idle < 60
    assert not main.doze(60)
    assert main.state == AWAKE


def test_a_woken_backend_is_idle_from_its_wake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not from the use before it: the request that asked for a slow wake may have given up
    (--wake-timeout) long before the wake ended, and its retry must find the backend awake."""
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    monkeypatch.setattr(time, "monotonic_ns", lambda: int(now[0] * 1e9))
    local = LocalActivity()
    main, first, _ = shared(tmp_path)
    for sleeper, user in ((local, local), (main, first)):
        user.enter()
        user.leave()
        now[0] += 60
        assert sleeper.doze(30)
        sleeper.settle(ASLEEP)
        sleeper.settle(WAKING)  # for a request that gave up meanwhile
        now[0] += 60
        sleeper.settle(AWAKE)
        assert not sleeper.doze(30)
        now[0] += 30
        assert sleeper.doze(30)


def test_the_backends_are_apart(tmp_path: Path) -> None:
    main, first, _ = shared(tmp_path)
    aligner = SharedActivity(main.table, ALIGNER, None)
    first.enter()
    assert aligner.doze(0)  # the ASR backend's use does not keep the aligner awake
    assert main.state == AWAKE


def test_a_dead_workers_uses_are_forgotten(tmp_path: Path) -> None:
    main, first, _ = shared(tmp_path)
    first.enter()
    main.table.forget(0)
    assert main.doze(0)


async def test_a_request_waits_for_the_wake_then_goes_on() -> None:
    activity = LocalActivity()
    activity.enter()
    assert activity.doze(0) is False  # in use
    activity.settle(ASLEEP)
    waits = Histogram("waits", "the wake waited for", registry=CollectorRegistry())
    waiting = asyncio.create_task(awake(activity, 30, "The speech model", waits))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    activity.settle(WAKING)
    await asyncio.sleep(0.1)
    assert not waiting.done()
    activity.settle(AWAKE)
    await waiting
    [family] = waits.collect()
    counted = {sample.name: sample.value for sample in family.samples}
    assert counted["waits_count"] == 1
    assert counted["waits_sum"] > 0


async def test_a_wake_past_patience_is_a_503_with_retry_after() -> None:
    activity: Activity = LocalActivity()
    activity.settle(ASLEEP)
    with pytest.raises(BackendGone) as refused:
        await awake(activity, 0.1, "The speech model")
    assert refused.value.status == 503
    assert "did not wake within" in refused.value.message
    assert "Retry-After" in refused.value.headers
