"""Which database holds the jobs, and how it is opened: the PostgreSQL database `--jobs-db`
names, else SQLite in the data folder, set up so that several processes can share it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, or_, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from ...errors import LaunchError
from ...settings.jobs import JobsSettings
from .migrate import upgrade_engine

P = ParamSpec("P")
T = TypeVar("T")
Row = dict[str, Any]
READ_ONLY = "read_only"  # a transaction's option: it only reads (SQLite takes no write lock)


def existing(settings: JobsSettings) -> bool:
    """There is a store to resume: PostgreSQL, or a SQLite database made before."""
    return bool(settings.jobs_db) or (settings.data_path / "jobs.sqlite3").exists()


def engine_of(settings: JobsSettings) -> Engine:
    url = settings.jobs_db.get_secret_value() if settings.jobs_db else None
    return engine_for(url, settings.data_path)


def prepare(settings: JobsSettings) -> None:
    """At start, before any port is taken or worker forked: a jobs database that is there
    brought to this release's tables, or the reason it cannot be, as a `LaunchError`."""
    if not existing(settings):
        return  # SQLite is made the first time work is asked for
    engine = engine_of(settings)
    try:
        upgrade_engine(engine)
    except DBAPIError as exc:
        where = engine.url.render_as_string(hide_password=True)
        said = " ".join(str(exc.orig).split())  # the driver's lines, as one
        raise LaunchError(f"cannot open the jobs database ({where}): {said}") from None
    finally:
        engine.dispose()


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


class Database:
    """The jobs' tables on one engine, each method of a subclass one transaction. The calls
    are blocking (the drivers are), so `run` gives them to a thread."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        upgrade_engine(engine)

    async def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(call, *args, **kwargs)

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        with self.engine.begin() as connection:
            yield connection

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self.engine.connect() as connection:
            reading = connection.execution_options(**{READ_ONLY: True})
            with reading.begin():
                yield reading

    def close(self) -> None:
        self.engine.dispose()


def page(
    db: Connection, query: Any, table: Any, after: str | None, limit: int, asc: bool
) -> list[Row]:
    """One page of a list, after the object `after` (OpenAI's cursor), by creation."""
    order = (
        (table.c.created_at, table.c.id) if asc else (table.c.created_at.desc(), table.c.id.desc())
    )
    if after:
        mark = db.execute(select(table.c.created_at, table.c.id).where(table.c.id == after)).first()
        if mark is not None:
            key = (table.c.created_at, table.c.id)
            if asc:
                query = query.where(or_(key[0] > mark[0], (key[0] == mark[0]) & (key[1] > mark[1])))
            else:
                query = query.where(or_(key[0] < mark[0], (key[0] == mark[0]) & (key[1] < mark[1])))
    return [dict(row) for row in db.execute(query.order_by(*order).limit(limit)).mappings()]
