"""A jobs database made before there were projects (the tables as the release before wrote
them: no project, no key, no usage), on SQLite and PostgreSQL, opened by this one: its files and
batches are the project `default`'s, readable as they were, and new work goes on in it."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Column, MetaData, Table, insert

from qwen3_asr_server.entrypoints.jobs.database import engine_for
from qwen3_asr_server.entrypoints.jobs.schema import metadata
from qwen3_asr_server.entrypoints.jobs.store import Store
from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT
from tests.unit.jobs.test_store import NOW, a_batch, a_file, database

__all__ = ["database"]  # the fixture, on both databases
ADDED = {  # what this release added to the tables, and the table it added
    ("files", "project"),
    ("reservations", "project"),
    ("batches", "project"),
    ("batches", "api_key"),
    ("events", "project"),
}


def released_before() -> MetaData:
    """The tables as the release before made them."""
    before = MetaData()
    for table in metadata.sorted_tables:
        if table.name == "usage":
            continue
        columns = [
            Column(column.name, column.type, primary_key=column.primary_key)
            for column in table.columns
            if (table.name, column.name) not in ADDED
        ]
        Table(table.name, before, *columns)
    return before


def test_a_database_made_before_projects_is_the_default_projects(
    database: str | None, tmp_path: Path
) -> None:
    engine = engine_for(database, tmp_path)
    before = released_before()
    before.create_all(engine)
    old_file = {key: value for key, value in a_file("file-old").items() if key != "project"}
    with engine.begin() as db:
        db.execute(insert(before.tables["files"]).values(**old_file))
        db.execute(insert(before.tables["batches"]).values(**a_batch("batch-old")))
    engine.dispose()

    store = Store(engine_for(database, tmp_path))  # the columns and the usage table added
    try:
        found = store.file("file-old", DEFAULT)
        assert found is not None
        assert {key: found[key] for key in old_file} == old_file
        assert found["project"] is None
        assert store.file("file-old", "notes") is None
        assert [row["id"] for row in store.files(DEFAULT, None, None, 10, True)] == ["file-old"]
        batch = store.batch("batch-old", DEFAULT)
        assert batch is not None
        assert batch["status"] == "validating"
        assert store.batches("notes", None, 10) == []
        store.add_file(a_file("file-new", NOW + 1, project="notes"))
        assert store.stored_bytes(DEFAULT) == 100
        assert store.stored_bytes("notes") == 100
        store.add_usage({(NOW - NOW % 60, "notes-web", "notes"): (1.0, 1)}, "m")
        assert len(store.usage(0, NOW + 60, [], [], [])) == 1
    finally:
        store.close()
