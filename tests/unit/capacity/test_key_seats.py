"""A key's sessions at once: its cap held in one process and across the workers' shared file,
each key counted apart, and a worker started again in a dead one's place counting none of its
sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen3_asr_server.capacity.key_seats import LocalKeySeats, SharedKeySeats, seat
from qwen3_asr_server.capacity.lease import Lease
from qwen3_asr_server.errors import APIError


def refused(take: object) -> APIError:
    with pytest.raises(APIError) as error:
        take()  # type: ignore[operator]
    assert (error.value.status, error.value.code) == (429, "session_limit_reached")
    return error.value


def test_one_process_holds_each_key_to_its_cap() -> None:
    counts = LocalKeySeats()
    counts.take("notes-web", 2)
    counts.take("notes-web", 2)
    error = refused(lambda: counts.take("notes-web", 2))
    assert "'notes-web' has 2 Realtime sessions open" in error.message
    counts.take("calls-batch", 2)  # a count of its own
    counts.leave("notes-web")
    counts.take("notes-web", 2)


def test_the_workers_share_a_keys_count_and_a_new_worker_counts_none(tmp_path: Path) -> None:
    zero, one = SharedKeySeats(tmp_path / "seats", 0), SharedKeySeats(tmp_path / "seats", 1)
    try:
        zero.take("notes-web", 3)
        one.take("notes-web", 3)
        one.take("notes-web", 3)
        refused(lambda: zero.take("notes-web", 3))
        one.close()
        again = SharedKeySeats(tmp_path / "seats", 1)  # worker 1 died with its two sessions
        again.take("notes-web", 3)
        again.take("notes-web", 3)
        refused(lambda: zero.take("notes-web", 3))
        zero.leave("notes-web")
        zero.leave("notes-web")  # never below none
        again.take("notes-web", 3)
        again.close()
    finally:
        zero.close()


def test_a_lease_takes_the_keys_seat_before_the_servers() -> None:
    counts, server = LocalKeySeats(), LocalKeySeats()
    server_seat = seat(server, "server", 5)
    own = seat(counts, "notes-web", 1)
    assert seat(counts, "notes-web", None) is None  # no cap: no seat
    with Lease(own_seat=own, seats=server_seat).take():
        refused(Lease(own_seat=own, seats=server_seat).take)
        server.take("server", 2)  # the refused lease held no server seat: room for one more
        server.leave("server")
    with Lease(own_seat=own, seats=server_seat).take():
        pass
