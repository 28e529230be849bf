"""The room held for files being written, on SQLite and on PostgreSQL: servers racing for the
last of the quota (each its own engine, as separate servers are) get no more than it holds,
a kept file's room becomes its row, and a dead writer's room lapses."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import update

from qwen3_asr_server.entrypoints.jobs.database import engine_for
from qwen3_asr_server.entrypoints.jobs.file_rows import RESERVE_SECONDS, Full
from qwen3_asr_server.entrypoints.jobs.schema import reservations
from qwen3_asr_server.entrypoints.jobs.store import Store
from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT
from tests.unit.jobs.test_store import NOW, a_file, database, store

__all__ = ["database", "store"]  # the fixtures, on both databases


def test_servers_racing_for_the_quota_hold_no_more_than_it(
    database: str | None, tmp_path: Path
) -> None:
    stores = [Store(engine_for(database, tmp_path)) for _ in range(2)]
    start = threading.Barrier(8)

    def upload(n: int) -> bool:
        start.wait()
        return stores[n % 2].reserve({f"file-{n}": 3}, DEFAULT, (10, None)) is None

    with ThreadPoolExecutor(8) as pool:
        held = list(pool.map(upload, range(8)))
    assert sum(held) == 3
    assert stores[0].stored_bytes() == 9
    for each in stores:
        each.close()


def test_a_kept_file_turns_its_room_into_its_row(store: Store) -> None:
    assert store.reserve({"file-a": 4, "file-b": 5}, DEFAULT, (10, None)) is None
    full = Full(10, 9, project=False)
    assert store.reserve({"file-c": 2}, DEFAULT, (10, None)) == full  # all or none: none held
    store.add_file(a_file("file-a", bytes=4))
    store.release(["file-b"])
    assert store.stored_bytes() == 4
    assert store.file("file-a", DEFAULT) is not None
    assert store.reserve({"file-c": 6}, DEFAULT, (10, None)) is None


def test_a_dead_writers_room_lapses_and_is_swept(store: Store) -> None:
    assert store.reserve({"file-a": 8}, DEFAULT, (10, None)) is None
    assert store.lapsed_reservations(NOW) == []
    with store.engine.begin() as db:
        db.execute(update(reservations).values(until=reservations.c.until - RESERVE_SECONDS))
    assert store.stored_bytes() == 0  # no longer counted, even before the sweeper runs
    assert store.lapsed_reservations(NOW + RESERVE_SECONDS) == ["file-a"]
    assert store.lapsed_reservations(NOW + RESERVE_SECONDS) == []


def test_a_project_is_held_to_its_own_quota_and_to_the_servers(store: Store) -> None:
    store.add_file(a_file("file-old", bytes=3, project=None))  # before projects: the default
    assert store.reserve({"file-a": 4}, "notes", (20, 5)) is None
    assert store.reserve({"file-b": 2}, "notes", (20, 5)) == Full(5, 4, project=True)
    assert store.reserve({"file-b": 2}, "calls", (20, 5)) is None  # another project's room
    assert store.reserve({"file-c": 12}, "calls", (20, None)) == Full(20, 9, project=False)
    assert store.stored_bytes("notes") == 4
    assert store.stored_bytes(DEFAULT) == 3
    assert store.stored_bytes() == 9
