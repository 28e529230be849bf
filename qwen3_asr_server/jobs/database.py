"""Which database holds the jobs, and how it is opened: the PostgreSQL database `--jobs-db`
names, else SQLite in the data folder, set up so that several processes can share it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url

READ_ONLY = "read_only"  # a transaction's option: it only reads (SQLite takes no write lock)


def engine_for(url: str | None, data_dir: Path) -> Engine:
    """The database `--jobs-db` names (a `postgresql://` URL runs on psycopg 3), else SQLite
    in the data folder: in WAL mode, every transaction that writes taking the write lock at
    its start, so that two processes' claims wait for each other instead of failing."""
    if url:
        parsed = make_url(url)
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, pool_pre_ping=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{data_dir / 'jobs.sqlite3'}", connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _connect(dbapi: Any, _: Any) -> None:
        dbapi.isolation_level = None  # SQLAlchemy's BEGIN below, not the driver's own
        dbapi.execute("PRAGMA journal_mode=WAL")
        # in WAL mode NORMAL loses nothing when the process dies (only a crash of the machine
        # may roll back the last commits), and a commit no longer waits for the disk
        dbapi.execute("PRAGMA synchronous=NORMAL")

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        reading = connection.get_execution_options().get(READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")

    return engine
