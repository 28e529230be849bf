"""A key's sessions at once: its cap held in one process and across the workers' shared file,
each key counted apart, a worker started again in a dead one's place counting none of its
sessions, and a lease refused at the key's cap with a 429 that is counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen3_asr_server.capacity.key_seats import LocalKeySeats, SharedKeySeats, seat
from qwen3_asr_server.capacity.lease import Lease
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.observability.metrics import Metrics


def test_one_process_holds_each_key_to_its_cap() -> None:
    counts = LocalKeySeats()
    assert [counts.take("notes-web", 2) for _ in range(3)] == [True, True, False]
    assert counts.take("calls-batch", 2)  # a count of its own
    counts.leave("notes-web")
    assert counts.take("notes-web", 2)


def test_the_workers_share_a_keys_count_and_a_new_worker_counts_none(tmp_path: Path) -> None:
    zero, one = SharedKeySeats(tmp_path / "seats", 0), SharedKeySeats(tmp_path / "seats", 1)
    try:
        assert [zero.take("notes-web", 3), one.take("notes-web", 3)] == [True, True]
        assert one.take("notes-web", 3)
        assert not zero.take("notes-web", 3)
        one.close()
        again = SharedKeySeats(tmp_path / "seats", 1)  # worker 1 died with its two sessions
        assert [again.take("notes-web", 3) for _ in range(2)] == [True, True]
        assert not zero.take("notes-web", 3)
        zero.leave("notes-web")
        zero.leave("notes-web")  # never below none
        assert again.take("notes-web", 3)
        again.close()
    finally:
        zero.close()


def test_a_lease_takes_the_keys_seat_before_the_servers_and_a_refusal_is_counted() -> None:
    metrics = Metrics()
    counts, server = LocalKeySeats(), LocalKeySeats()
    server_seat = seat(server, "server", 5, metrics)
    own = seat(counts, "notes-web", 1, metrics)
    assert seat(counts, "notes-web", None, metrics) is None  # no cap: no seat
    with Lease(own_seat=own, seats=server_seat).take():
        with pytest.raises(APIError) as refused:
            Lease(own_seat=own, seats=server_seat).take()
        assert (refused.value.status, refused.value.code) == (429, "session_limit_reached")
        assert "'notes-web' has 1 Realtime sessions open" in refused.value.message
        assert refused.value.headers == {"Retry-After": "5"}
        assert server.take("server", 2)  # the refused lease held no server seat
        server.leave("server")
    with Lease(own_seat=own, seats=server_seat).take():
        pass
    rejected = {"reason": "key_session_limit"}
    assert metrics.registry.get_sample_value("qwen3_asr_rejected_total", rejected) == 1
