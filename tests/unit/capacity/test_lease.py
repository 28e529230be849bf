"""A live session's lease: readiness, seat, activity and drain taken in that order, and given
back, the last first, however the session ends; a step that fails on entry leaves nothing
taken."""

from __future__ import annotations

import asyncio

import pytest

from qwen3_asr_server.capacity.drain import Drain
from qwen3_asr_server.capacity.lease import Lease
from qwen3_asr_server.capacity.seats import LocalSeats
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.observability.metrics import Metrics


class Journal:
    """What the lease did, in order, and what each count holds now."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.held: dict[str, int] = {}

    def count(self, name: str, fails: bool = False) -> Counted:
        self.held[name] = 0
        return Counted(self, name, fails)

    def ready(self, status: int | None = None) -> Ready:
        return Ready(self, status)


class Counted:
    """An activity or a drain (or a seat: `take` is its `enter`)."""

    def __init__(self, journal: Journal, name: str, fails: bool) -> None:
        self.journal, self.name, self.fails = journal, name, fails

    def enter(self) -> None:
        if self.fails:
            raise APIError(429, f"no {self.name}")
        self.journal.said.append(f"{self.name}+")
        self.journal.held[self.name] += 1

    def leave(self) -> None:
        self.journal.said.append(f"{self.name}-")
        self.journal.held[self.name] -= 1

    take = enter


class Ready:
    def __init__(self, journal: Journal, status: int | None) -> None:
        self.journal, self.status = journal, status

    def __call__(self) -> None:
        self.journal.said.append("ready?")
        if self.status is not None:
            raise APIError(self.status, "not now")


def _everything(journal: Journal, **failing: bool) -> Lease:
    return Lease(
        ready=journal.ready(),
        seats=journal.count("seat", failing.get("seat", False)),
        activity=journal.count("activity", failing.get("activity", False)),
        drain=journal.count("drain", failing.get("drain", False)),
    )


def test_the_steps_are_taken_in_order_and_given_back_the_last_first() -> None:
    journal = Journal()
    with _everything(journal).take():
        assert journal.said == ["ready?", "seat+", "activity+", "drain+"]
        assert set(journal.held.values()) == {1}
    assert journal.said[4:] == ["drain-", "activity-", "seat-"]
    assert set(journal.held.values()) == {0}


def test_everything_is_given_back_on_an_exception() -> None:
    journal = Journal()
    with pytest.raises(ValueError, match="the session broke"), _everything(journal).take():
        raise ValueError("the session broke")
    assert set(journal.held.values()) == {0}
    assert journal.said[-3:] == ["drain-", "activity-", "seat-"]


async def test_everything_is_given_back_when_the_session_is_cancelled() -> None:
    journal = Journal()
    entered = asyncio.Event()

    async def session() -> None:
        with _everything(journal).take():
            entered.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(session())
    await entered.wait()
    assert set(journal.held.values()) == {1}
    task.cancel()
    await asyncio.wait([task])
    assert task.cancelled()
    assert set(journal.held.values()) == {0}


def test_a_server_not_ready_takes_nothing_and_says_503_even_when_full() -> None:
    """Readiness comes first: a loading server answers 503, not the 429 of a full one."""
    journal = Journal()
    lease = Lease(ready=journal.ready(503), seats=journal.count("seat", fails=True))
    with pytest.raises(APIError) as refused:
        lease.take()
    assert refused.value.status == 503
    assert journal.said == ["ready?"]


def test_a_full_server_leaves_the_activity_and_the_drain_untouched() -> None:
    journal = Journal()
    with pytest.raises(APIError) as refused:
        _everything(journal, seat=True).take()
    assert refused.value.status == 429
    assert journal.said == ["ready?"]
    assert set(journal.held.values()) == {0}


@pytest.mark.parametrize(
    ("failing", "given_back"),
    [("activity", ["seat-"]), ("drain", ["activity-", "seat-"])],
)
def test_a_step_that_fails_gives_back_those_before_it(failing: str, given_back: list[str]) -> None:
    journal = Journal()
    lease = _everything(journal, **{failing: True})
    with pytest.raises(APIError):
        lease.take()
    assert journal.said[-len(given_back) :] == given_back
    assert set(journal.held.values()) == {0}
    lease.give_back()  # nothing is held: nothing more is given back
    assert set(journal.held.values()) == {0}


def test_a_lease_is_given_back_once() -> None:
    """A call whose answer failed is given back at once, and its connection's end may give
    it back again: only the first gives anything back."""
    journal = Journal()
    lease = _everything(journal).take()
    lease.give_back()
    lease.give_back()
    with lease.take():
        pass
    assert set(journal.held.values()) == {0}
    assert journal.said.count("seat-") == 2


def test_a_lease_is_taken_before_it_is_entered_and_only_once() -> None:
    journal = Journal()
    lease = _everything(journal)
    with pytest.raises(RuntimeError), lease:
        pass
    assert journal.said == []
    lease.take()
    with pytest.raises(RuntimeError):
        lease.take()
    assert set(journal.held.values()) == {1}


async def _abort() -> None:
    return None


def test_a_lease_of_the_real_counts() -> None:
    """A seat and the drain's count as the server keeps them: the seats' gauge and the
    drain's idle flag follow the lease."""
    metrics = Metrics()
    seats = LocalSeats(1, metrics)
    drain = Drain(_abort, grace=1.0)
    lease = Lease(seats=seats, drain=drain)
    with lease.take():
        assert (seats.taken, drain.active) == (1, 1)
        assert metrics.realtime_sessions._value.get() == 1
        with pytest.raises(APIError) as full:
            Lease(seats=seats, drain=drain).take()
        assert full.value.status == 429
        assert drain.active == 1  # the refused one did not enter
    assert (seats.taken, drain.active) == (0, 0)
    assert metrics.realtime_sessions._value.get() == 0
