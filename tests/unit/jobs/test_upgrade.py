"""The jobs database's schema revisions (Alembic), on SQLite and PostgreSQL: a database an
earlier release made is upgraded when opened, its files and batches the project `default`'s and
readable as they were; one made from nothing has the tables the code reads; servers opening one
at once upgrade it once; one a newer release wrote is refused, untouched."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Column, Engine, MetaData, Table, insert, select, text

from qwen3_asr_server.entrypoints.jobs.database import engine_for
from qwen3_asr_server.entrypoints.jobs.migrate import NewerDatabase
from qwen3_asr_server.entrypoints.jobs.schema import metadata
from qwen3_asr_server.entrypoints.jobs.store import Store
from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT
from tests.unit.jobs.test_store import LEASE, NOW, a_batch, a_file, database

__all__ = ["database"]  # the fixture, on both databases
HEAD = "0003"
PROJECTS = {("files", "project"), ("reservations", "project"), ("batches", "project")}
PROJECTS |= {("batches", "api_key"), ("events", "project"), ("usage", "*")}
QUOTA = {("reservations", "*"), ("batches", "attempts")}
TRACES = {("batches", "traceparent")}  # revision 0003's
RELEASES = {  # what each earlier build lacked of the tables ("*": the whole table)
    "before projects": PROJECTS | TRACES,
    "before the storage quota": PROJECTS | QUOTA | TRACES,
    "a development build with projects, before revisions": {("usage", "*")} | TRACES,
}


def release(lacking: set[tuple[str, str]]) -> MetaData:
    """The tables as a release without `lacking` made them."""
    before = MetaData()
    for table in metadata.sorted_tables:
        if (table.name, "*") in lacking:
            continue
        columns = [
            Column(column.name, column.type, primary_key=column.primary_key)
            for column in table.columns
            if (table.name, column.name) not in lacking
        ]
        Table(table.name, before, *columns)
    return before


def version(engine: Engine) -> list[str]:
    with engine.connect() as db:
        return [row[0] for row in db.execute(text("SELECT version_num FROM alembic_version"))]


@pytest.mark.parametrize("made_by", list(RELEASES))
def test_a_database_an_earlier_release_made_is_upgraded_and_the_default_projects(
    made_by: str, database: str | None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = engine_for(database, tmp_path)
    before = release(RELEASES[made_by])
    before.create_all(engine)
    old_file = {key: value for key, value in a_file("file-old").items() if key != "project"}
    old_batch = {k: v for k, v in a_batch("batch-old").items() if k in before.tables["batches"].c}
    with engine.begin() as db:
        db.execute(insert(before.tables["files"]).values(**old_file))
        db.execute(insert(before.tables["batches"]).values(**old_batch))
    engine.dispose()

    with caplog.at_level(logging.INFO, "qwen3_asr_server.entrypoints.jobs.migrate"):
        store = Store(engine_for(database, tmp_path))
    try:
        assert f"upgraded from schema revision none (a release before revisions) to {HEAD}" in (
            caplog.text
        )
        assert version(store.engine) == [HEAD]
        found = store.file("file-old", DEFAULT)
        assert found is not None
        assert {key: found[key] for key in old_file} == old_file
        assert store.file("file-old", "notes") is None
        assert [row["id"] for row in store.files(DEFAULT, None, None, 10, True)] == ["file-old"]
        assert store.batches("notes", None, 10) == []
        taken = store.claim_batch("server-1", LEASE)  # its claims counted from here on
        assert taken is not None
        assert (taken["id"], taken["attempts"]) == ("batch-old", 1)
        store.add_file(a_file("file-new", NOW + 1, project="notes"))
        assert (store.stored_bytes(DEFAULT), store.stored_bytes("notes")) == (100, 100)
        store.add_usage({(NOW - NOW % 60, "notes-web", "notes"): (1.0, 1)}, "m")
        assert len(store.usage(0, NOW + 60, [], [], [])) == 1
    finally:
        store.close()


def test_a_database_made_by_the_revisions_has_the_tables_the_code_reads(
    database: str | None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "qwen3_asr_server.entrypoints.jobs.migrate"):
        store = Store(engine_for(database, tmp_path))
    try:
        assert f"made at schema revision {HEAD}" in caplog.text
        with store.engine.connect() as db:
            differences = compare_metadata(MigrationContext.configure(db), metadata)
        assert [each for each in differences if "alembic_version" not in str(each)] == []
    finally:
        store.close()
    caplog.clear()
    with caplog.at_level(logging.INFO, "qwen3_asr_server.entrypoints.jobs.migrate"):
        Store(engine_for(database, tmp_path)).close()  # opened again: nothing to do
    assert caplog.text == ""


def test_servers_opening_a_new_database_at_once_make_it_once(
    database: str | None, tmp_path: Path
) -> None:
    def opened(_: int) -> str:
        store = Store(engine_for(database, tmp_path))
        store.close()
        return "opened"

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(opened, range(4))) == ["opened"] * 4
    engine = engine_for(database, tmp_path)
    assert version(engine) == [HEAD]
    engine.dispose()


def test_a_database_a_newer_release_wrote_is_refused_untouched(
    database: str | None, tmp_path: Path
) -> None:
    Store(engine_for(database, tmp_path)).close()
    engine = engine_for(database, tmp_path)
    with engine.begin() as db:
        db.execute(text("UPDATE alembic_version SET version_num = '0099'"))
        db.execute(text("CREATE TABLE later (id INTEGER)"))
    with pytest.raises(NewerDatabase) as refused:
        Store(engine_for(database, tmp_path))
    message = str(refused.value)
    assert "schema revision '0099', which a newer release of qwen3-asr-server wrote" in message
    assert f"knows revisions up to '{HEAD}'" in message
    assert "\n" not in message
    assert version(engine) == ["0099"]
    with engine.connect() as db:
        assert db.execute(select(Table("later", MetaData(), autoload_with=db))).all() == []
    engine.dispose()
