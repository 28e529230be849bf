"""The jobs' store, on SQLite (one server's) and on PostgreSQL (several servers'): files listed
as OpenAI pages them, batches and lines claimed by one server at a time under a lease, and a
batch's end written at once. Two owners stand for two servers; a lease lapses as a dead
server's would."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from qwen3_asr_server.entrypoints.jobs.database import engine_for
from qwen3_asr_server.entrypoints.jobs.schema import batches, events, lines
from qwen3_asr_server.entrypoints.jobs.store import Store
from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT

NOW = int(time.time())
DAY = 86400
ENDPOINT = "/v1/audio/transcriptions"
LEASE = 30.0


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> str | None:
    """The jobs' database URL (None: SQLite in the data folder)."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(database: str | None, tmp_path: Path) -> Iterator[Store]:
    store = Store(engine_for(database, tmp_path))
    yield store
    store.close()


def later(store: Store, seconds: float) -> None:
    """The clock moved on by `seconds`, as every lease and deadline sees it: they are moved
    back instead, so that no test sleeps or races a slow machine."""
    with store.engine.begin() as db:
        for table in (batches, lines, events):
            db.execute(
                update(table)
                .where(table.c.lease_until.is_not(None))
                .values(lease_until=table.c.lease_until - seconds)
            )
        db.execute(update(batches).values(expires_at=batches.c.expires_at - int(seconds)))


def a_file(file_id: str, created_at: int = NOW, **row: Any) -> dict[str, Any]:
    defaults = {
        "purpose": "batch",
        "filename": f"{file_id}.jsonl",
        "bytes": 100,
        "project": DEFAULT,
    }
    return {"id": file_id, "created_at": created_at, "expires_at": None, **defaults, **row}


def a_batch(batch_id: str, created_at: int = NOW, expires_at: int = NOW + DAY) -> dict[str, Any]:
    return {
        "id": batch_id,
        "endpoint": ENDPOINT,
        "input_file_id": f"input-{batch_id}",
        "completion_window": "24h",
        "metadata": {"job": batch_id},
        "status": "validating",
        "created_at": created_at,
        "expires_at": expires_at,
    }


def parsed(count: int) -> list[dict[str, Any]]:
    return [
        {"idx": idx, "custom_id": f"req-{idx}", "body": {"model": "m", "file_id": f"f{idx}"}}
        for idx in range(count)
    ]


def in_progress(store: Store, batch: dict[str, Any], lines: int) -> str:
    """A batch validated by a server and its lines queued, as the runner leaves it."""
    store.add_batch(batch)
    claimed = store.claim_batch("validator", 30)
    assert claimed is not None
    assert claimed["id"] == batch["id"]
    assert store.start_batch(batch["id"], "validator", parsed(lines), NOW)
    return str(batch["id"])


def claimed(store: Store, owner: str, lease: float = 30) -> tuple[str, int] | None:
    line = store.claim_line(owner, lease)
    return None if line is None else (line["batch_id"], line["idx"])


def counts(store: Store, batch_id: str) -> dict[str, int]:
    batch = store.batch(batch_id, DEFAULT)
    assert batch is not None
    return dict(batch["counts"])


def status(store: Store, batch_id: str) -> str:
    batch = store.batch(batch_id, DEFAULT)
    assert batch is not None
    return str(batch["status"])


# files


def test_a_file_reads_back_as_it_was_added(store: Store) -> None:
    row = a_file("file-a", expires_at=NOW + DAY, purpose="batch_output", bytes=12345)
    store.add_file(row)
    assert store.file("file-a", DEFAULT) == row
    assert store.file("file-b", DEFAULT) is None


def test_files_are_paged_by_creation_after_a_cursor_either_way(store: Store) -> None:
    # two by two in the same second: the id breaks the tie
    for n in range(6):
        purpose = "batch" if n % 2 == 0 else "batch_output"
        store.add_file(a_file(f"file-{n}", NOW + n // 2, purpose=purpose))

    def ids(purpose: str | None, after: str | None, limit: int, asc: bool) -> list[str]:
        return [row["id"] for row in store.files(DEFAULT, purpose, after, limit, asc)]

    assert ids(None, None, 4, True) == ["file-0", "file-1", "file-2", "file-3"]
    assert ids(None, "file-3", 4, True) == ["file-4", "file-5"]
    assert ids(None, "file-5", 4, True) == []
    assert ids(None, None, 2, False) == ["file-5", "file-4"]
    assert ids(None, "file-4", 2, False) == ["file-3", "file-2"]
    assert ids(None, "file-0", 2, False) == []
    assert ids("batch", None, 10, True) == ["file-0", "file-2", "file-4"]
    assert ids("batch_output", "file-1", 10, False) == []
    assert ids("batch_output", "file-5", 10, False) == ["file-3", "file-1"]


def test_stored_bytes_count_every_file_until_it_is_deleted(store: Store) -> None:
    assert store.stored_bytes() == 0
    for n, size in enumerate((100, 2_000, 3 * 2**40)):  # past 32 bits: BigInteger
        store.add_file(a_file(f"file-{n}", bytes=size))
    assert store.stored_bytes() == 100 + 2_000 + 3 * 2**40
    assert store.delete_file("file-2", DEFAULT)
    assert not store.delete_file("file-2", DEFAULT)
    assert store.file("file-2", DEFAULT) is None
    assert store.stored_bytes() == 2_100


def test_files_expire_at_their_time_and_those_without_one_never(store: Store) -> None:
    store.add_file(a_file("kept"))
    store.add_file(a_file("past", expires_at=NOW - 10))
    store.add_file(a_file("now", expires_at=NOW))
    store.add_file(a_file("later", expires_at=NOW + 10))
    assert sorted(store.expired_files(NOW)) == ["now", "past"]
    assert sorted(store.expired_files(NOW + DAY)) == ["later", "now", "past"]


# batches


def test_batches_are_listed_newest_first_with_their_counts(store: Store) -> None:
    in_progress(store, a_batch("batch-0", NOW), 2)
    store.add_batch(a_batch("batch-1", NOW + 1))
    store.add_batch(a_batch("batch-2", NOW + 2))
    listed = store.batches(DEFAULT, None, 2)
    assert [row["id"] for row in listed] == ["batch-2", "batch-1"]
    rest = store.batches(DEFAULT, "batch-1", 2)
    assert [row["id"] for row in rest] == ["batch-0"]
    assert rest[0]["counts"] == {"total": 2, "completed": 0, "failed": 0}
    assert rest[0]["metadata"] == {"job": "batch-0"}


def test_a_batch_is_claimed_by_one_server_until_its_lease_lapses(store: Store) -> None:
    store.add_batch(a_batch("batch-a"))
    first = store.claim_batch("server-1", LEASE)
    assert first is not None
    assert (first["id"], first["owner"], first["status"]) == ("batch-a", "server-1", "validating")
    assert store.claim_batch("server-1", LEASE) is None
    assert store.claim_batch("server-2", LEASE) is None
    later(store, LEASE + 1)
    second = store.claim_batch("server-2", 30)
    assert second is not None
    assert (second["id"], second["owner"]) == ("batch-a", "server-2")
    # the first server, back, has lost it
    assert not store.start_batch("batch-a", "server-1", parsed(2), NOW)
    assert status(store, "batch-a") == "validating"
    assert counts(store, "batch-a")["total"] == 0


def test_each_claim_of_a_batch_is_counted(store: Store) -> None:
    """The runner fails a batch whose validation was taken up too often (a server died, or
    failed, each time) instead of trying it forever."""
    store.add_batch(a_batch("batch-a"))
    for attempt in (1, 2, 3):
        taken = store.claim_batch("server-1", LEASE)
        assert taken is not None
        assert taken["attempts"] == attempt
        later(store, LEASE + 1)


def test_the_oldest_batch_is_claimed_first(store: Store) -> None:
    store.add_batch(a_batch("newer", NOW + 5))
    store.add_batch(a_batch("older", NOW))
    found = [store.claim_batch(owner, 30) for owner in ("server-1", "server-2", "server-3")]
    assert [row["id"] if row else None for row in found] == ["older", "newer", None]


def test_starting_a_batch_queues_its_lines_for_its_owner_only(store: Store) -> None:
    store.add_batch(a_batch("batch-a"))
    assert store.claim_batch("server-1", 30) is not None
    assert not store.start_batch("batch-a", "server-2", parsed(3), NOW)
    assert status(store, "batch-a") == "validating"
    assert store.start_batch("batch-a", "server-1", parsed(3), NOW + 1)
    batch = store.batch("batch-a", DEFAULT)
    assert batch is not None
    assert (batch["status"], batch["in_progress_at"], batch["owner"]) == (
        "in_progress",
        NOW + 1,
        None,
    )
    assert batch["counts"] == {"total": 3, "completed": 0, "failed": 0}
    # started once: its lines are not queued twice, and it needs no server while they wait
    assert not store.start_batch("batch-a", "server-1", parsed(3), NOW)
    assert counts(store, "batch-a")["total"] == 3
    assert store.claim_batch("server-2", 30) is None


def test_a_batch_with_nothing_to_run_is_claimed_again_to_be_finalized(store: Store) -> None:
    in_progress(store, a_batch("empty"), 0)
    again = store.claim_batch("server-2", 30)
    assert again is not None
    assert (again["id"], again["status"]) == ("empty", "in_progress")


# lines: the queue


def test_two_servers_claim_lines_in_order_and_never_the_same(store: Store) -> None:
    first = in_progress(store, a_batch("first", NOW), 2)
    second = in_progress(store, a_batch("second", NOW + 1), 2)
    line = store.claim_line("server-1", 30)
    assert line is not None
    assert line["endpoint"] == ENDPOINT
    assert (line["custom_id"], line["body"], line["attempts"]) == (
        "req-0",
        {"model": "m", "file_id": "f0"},
        1,
    )
    taken = [claimed(store, owner) for owner in ("server-2", "server-1", "server-2", "server-1")]
    assert taken == [(first, 1), (second, 0), (second, 1), None]


def test_a_renewed_lease_holds_and_a_lapsed_one_is_taken_over(store: Store) -> None:
    batch = in_progress(store, a_batch("batch-a"), 1)
    assert claimed(store, "server-1", 10) == (batch, 0)
    assert store.renew_line(batch, 0, "server-1", LEASE)
    later(store, 20)  # past the first lease, not the renewed one
    assert claimed(store, "server-2") is None
    assert store.renew_line(batch, 0, "server-1", 10)
    later(store, 11)  # server-1 died
    line = store.claim_line("server-2", 30)
    assert line is not None
    assert (line["idx"], line["owner"], line["attempts"]) == (0, "server-2", 2)
    assert not store.renew_line(batch, 0, "server-1", 30)
    assert not store.finish_line(batch, 0, "server-1", False, {"from": "server-1"})
    assert store.renew_line(batch, 0, "server-2", 30)
    assert store.finish_line(batch, 0, "server-2", False, {"from": "server-2"})
    assert store.done_lines(batch) == [{"idx": 0, "failed": False, "output": {"from": "server-2"}}]


def test_a_line_is_finished_once_by_its_holder(store: Store) -> None:
    batch = in_progress(store, a_batch("batch-a"), 3)
    assert claimed(store, "server-1") == (batch, 0)
    assert claimed(store, "server-2") == (batch, 1)
    assert not store.finish_line(batch, 0, "server-2", False, {"n": 0})
    assert store.finish_line(batch, 0, "server-1", False, {"n": 0})
    assert not store.finish_line(batch, 0, "server-1", True, {"n": "again"})
    assert store.finish_line(batch, 1, "server-2", True, {"error": 1})
    assert counts(store, batch) == {"total": 3, "completed": 1, "failed": 1}
    assert store.done_lines(batch) == [
        {"idx": 0, "failed": False, "output": {"n": 0}},
        {"idx": 1, "failed": True, "output": {"error": 1}},
    ]
    assert claimed(store, "server-1") == (batch, 2)
    assert not store.renew_line(batch, 0, "server-1", 30)  # done, not running


def test_a_released_line_waits_its_delay_before_it_is_claimed_again(store: Store) -> None:
    batch = in_progress(store, a_batch("batch-a"), 2)
    assert claimed(store, "server-1") == (batch, 0)
    store.release_line(batch, 0, "server-2", 0)  # not its line: nothing happens
    store.release_line(batch, 0, "server-1", 5)
    assert not store.finish_line(batch, 0, "server-1", False, {})
    assert claimed(store, "server-2") == (batch, 1)
    assert claimed(store, "server-2") is None
    later(store, 6)
    line = store.claim_line("server-2", 30)
    assert line is not None
    assert (line["idx"], line["attempts"]) == (0, 1)  # given back, not counted
    later(store, 31)  # server-2 died with both lines: those claims count
    line = store.claim_line("server-3", 30)
    assert line is not None
    assert (line["idx"], line["attempts"]) == (0, 2)
    assert counts(store, batch) == {"total": 2, "completed": 0, "failed": 0}


# a batch's end


def test_cancelling_drops_the_queued_lines_and_stops_the_running_one(store: Store) -> None:
    batch = in_progress(store, a_batch("batch-a"), 3)
    assert claimed(store, "server-1") == (batch, 0)
    assert store.cancel(batch, DEFAULT, NOW + 5)
    assert not store.cancel(batch, DEFAULT, NOW + 6)
    cancelling = store.batch(batch, DEFAULT)
    assert cancelling is not None
    assert (cancelling["status"], cancelling["cancelling_at"]) == ("cancelling", NOW + 5)
    assert claimed(store, "server-2") is None
    assert store.claim_batch("server-2", 30) is None  # its line still runs
    assert not store.renew_line(batch, 0, "server-1", 30)
    assert not store.finish_line(batch, 0, "server-1", False, {})
    assert counts(store, batch) == {"total": 3, "completed": 0, "failed": 0}
    finalizing = store.claim_batch("server-2", 30)
    assert finalizing is not None
    assert (finalizing["id"], finalizing["status"]) == (batch, "cancelling")


def test_a_cancelled_batch_is_finalized_when_its_running_line_ends(store: Store) -> None:
    batch = in_progress(store, a_batch("batch-a"), 2)
    assert claimed(store, "server-1") == (batch, 0)
    assert store.cancel(batch, DEFAULT, NOW)
    assert store.finish_line(batch, 0, "server-1", False, {"n": 0})
    finalizing = store.claim_batch("server-2", 30)
    assert finalizing is not None
    assert finalizing["id"] == batch
    assert store.done_lines(batch) == [{"idx": 0, "failed": False, "output": {"n": 0}}]


def test_a_cancelled_batch_whose_server_died_is_finalized_once_the_lease_lapses(
    store: Store,
) -> None:
    batch = in_progress(store, a_batch("batch-a"), 2)
    assert claimed(store, "server-1", LEASE) == (batch, 0)
    assert store.cancel(batch, DEFAULT, NOW)
    assert store.claim_batch("server-2", 30) is None
    later(store, LEASE + 1)  # server-1 died with the line
    finalizing = store.claim_batch("server-2", 30)
    assert finalizing is not None
    assert (finalizing["id"], finalizing["status"]) == (batch, "cancelling")


def test_a_validating_batch_can_be_cancelled(store: Store) -> None:
    store.add_batch(a_batch("batch-a"))
    assert store.cancel("batch-a", DEFAULT, NOW)
    finalizing = store.claim_batch("server-1", 30)
    assert finalizing is not None
    assert (finalizing["id"], finalizing["status"]) == ("batch-a", "cancelling")
    assert not store.start_batch("batch-a", "server-1", parsed(2), NOW)
    assert counts(store, "batch-a")["total"] == 0


def expired(line: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": line["custom_id"], "error": "batch_expired"}


def test_an_expired_batch_is_claimed_with_lines_open_and_they_fail(store: Store) -> None:
    batch = in_progress(store, a_batch("batch-a", expires_at=int(time.time()) + 60), 3)
    assert claimed(store, "server-1") == (batch, 0)
    assert claimed(store, "server-1") == (batch, 1)
    assert store.finish_line(batch, 0, "server-1", False, {"n": 0})
    assert store.claim_batch("server-2", 30) is None
    later(store, 61)
    assert claimed(store, "server-2") is None  # too late to start one
    finalizing = store.claim_batch("server-2", 30)
    assert finalizing is not None
    assert (finalizing["id"], finalizing["status"]) == (batch, "in_progress")
    store.expire_open_lines(batch, expired)
    # the line server-1 still runs is answered once: by the expiry
    assert not store.finish_line(batch, 1, "server-1", False, {"n": 1})
    assert not store.renew_line(batch, 1, "server-1", 30)
    assert store.done_lines(batch) == [
        {"idx": 0, "failed": False, "output": {"n": 0}},
        {"idx": 1, "failed": True, "output": {"custom_id": "req-1", "error": "batch_expired"}},
        {"idx": 2, "failed": True, "output": {"custom_id": "req-2", "error": "batch_expired"}},
    ]
    assert counts(store, batch) == {"total": 3, "completed": 1, "failed": 2}


def ended(store: Store, batch: str, owner: str) -> bool:
    """The batch completed with its output file and the webhook event announcing it."""
    output = a_file("file-out", NOW + 9, purpose="batch_output", expires_at=NOW + DAY)
    event = {"id": "evt-1", "body": {"type": "batch.completed"}, "created_at": NOW, "next_at": NOW}
    values = {"status": "completed", "completed_at": NOW + 9, "output_file_id": "file-out"}
    return store.end_batch(batch, owner, values, [output], event)


def test_a_batch_ends_with_its_files_and_event_only_for_its_owner(store: Store) -> None:
    batch = in_progress(store, a_batch("batch-a"), 2)
    for idx in (0, 1):
        assert claimed(store, "server-1") == (batch, idx)
        assert store.finish_line(batch, idx, "server-1", idx == 1, {"n": idx})
    assert store.claim_batch("server-2", 30) is not None
    assert not ended(store, batch, "server-1")
    assert store.file("file-out", DEFAULT) is None
    assert status(store, batch) == "in_progress"
    assert len(store.done_lines(batch)) == 2
    assert ended(store, batch, "server-2")
    done = store.batch(batch, DEFAULT)
    assert done is not None
    assert (done["status"], done["completed_at"], done["output_file_id"], done["owner"]) == (
        "completed",
        NOW + 9,
        "file-out",
        None,
    )
    # its lines are gone: their counts stay
    assert done["request_counts"] == {"total": 2, "completed": 1, "failed": 1}
    output = store.file("file-out", DEFAULT)
    assert output is not None
    assert output["purpose"] == "batch_output"
    assert store.done_lines(batch) == []
    assert store.claim_batch("server-2", 30) is None
    with store.engine.connect() as db:
        assert [row.id for row in db.execute(select(events))] == ["evt-1"]


def test_servers_sharing_the_database_claim_every_line_exactly_once(
    database: str | None, tmp_path: Path
) -> None:
    """What exactly-once output rests on: servers racing for lines, each with its own engine
    (its own connections) on the one database, every line claimed and answered once."""
    stores = [Store(engine_for(database, tmp_path)) for _ in range(2)]
    sizes = {in_progress(stores[0], a_batch(f"batch-{n}", NOW + n), 40): 40 for n in range(2)}
    start = threading.Barrier(4)

    def server(store: Store, owner: str) -> list[tuple[str, int]]:
        start.wait()
        taken = []
        while line := store.claim_line(owner, 30):
            taken.append((line["batch_id"], line["idx"]))
            assert store.finish_line(line["batch_id"], line["idx"], owner, False, {"by": owner})
        return taken

    with ThreadPoolExecutor(4) as pool:
        runs = [pool.submit(server, stores[n % 2], f"server-{n}") for n in range(4)]
        taken = [key for run in runs for key in run.result()]
    assert sorted(taken) == [(batch, idx) for batch, size in sizes.items() for idx in range(size)]
    for batch, size in sizes.items():
        assert counts(stores[1], batch) == {"total": size, "completed": size, "failed": 0}
    for store in stores:
        store.close()
