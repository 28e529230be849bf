"""Where jobs are kept: SQLite under `--data-dir` by default, or the PostgreSQL database that
`--jobs-db` names, which several servers then share. One SQLAlchemy Core code path serves
both: claims are a compare-and-set UPDATE on a row's lease (PostgreSQL also skips rows that
another server has locked), which both databases make atomic. The calls are blocking (the
drivers are), so `run` gives them to a thread.

Why no queue library: the ones that keep a queue in a database do it in PostgreSQL only, or
need a broker (Redis) beside it; here a line's claim, its answer and the batch's counts must
change together, in the database that already holds them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    Table,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError

from .database import READ_ONLY
from .schema import batches, create, events, files, lines

P = ParamSpec("P")
T = TypeVar("T")
Row = dict[str, Any]
OPEN = ("queued", "running")  # a line's states before it is done (or cancelled)


class Store:
    """The jobs' rows. Every method is one transaction."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        try:
            with engine.begin() as db:
                create(db)
        except DBAPIError:  # another server created the tables at the same moment
            with engine.begin() as db:
                create(db)

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

    # files

    def add_file(self, row: Row) -> None:
        with self._begin() as db:
            db.execute(insert(files).values(**row))

    def file(self, file_id: str) -> Row | None:
        """The file, unless it expired (the sweeper may not have deleted it yet)."""
        query = select(files).where(files.c.id == file_id, _alive())
        with self._read() as db:
            found = db.execute(query).mappings().first()
        return dict(found) if found else None

    def files(self, purpose: str | None, after: str | None, limit: int, asc: bool) -> list[Row]:
        query = select(files).where(_alive())
        if purpose:
            query = query.where(files.c.purpose == purpose)
        with self._read() as db:
            return _page(db, query, files, after, limit, asc)

    def delete_file(self, file_id: str) -> bool:
        with self._begin() as db:
            return db.execute(delete(files).where(files.c.id == file_id)).rowcount == 1

    def stored_bytes(self) -> int:
        with self._read() as db:
            return int(db.execute(select(func.coalesce(func.sum(files.c.bytes), 0))).scalar_one())

    def expired_files(self, now: float) -> list[str]:
        query = select(files.c.id).where(files.c.expires_at.is_not(None), files.c.expires_at <= now)
        with self._read() as db:
            return list(db.execute(query).scalars())

    # batches

    def add_batch(self, row: Row) -> None:
        with self._begin() as db:
            db.execute(insert(batches).values(**row))

    def batch(self, batch_id: str) -> Row | None:
        with self._read() as db:
            found = db.execute(select(batches).where(batches.c.id == batch_id)).mappings().first()
            return {**found, "counts": _counts(db, batch_id)} if found else None

    def batches(self, after: str | None, limit: int) -> list[Row]:
        with self._read() as db:
            rows = _page(db, select(batches), batches, after, limit, asc=False)
            return [{**row, "counts": _counts(db, row["id"])} for row in rows]

    def cancel(self, batch_id: str, now: int) -> bool:
        """A batch still at work goes to `cancelling`; its lines not started are dropped."""
        with self._begin() as db:
            changed = db.execute(
                update(batches)
                .where(
                    batches.c.id == batch_id, batches.c.status.in_(("validating", "in_progress"))
                )
                .values(status="cancelling", cancelling_at=now)
            ).rowcount
            if changed:
                db.execute(
                    update(lines)
                    .where(lines.c.batch_id == batch_id, lines.c.status == "queued")
                    .values(status="cancelled")
                )
        return bool(changed)

    def claim_batch(self, owner: str, lease: float) -> Row | None:
        """A batch that needs a server: one to validate, or one with nothing left to run (or
        out of time, or cancelled, once no line runs under a live lease: a dead server's line
        never ends) to finalize; none when none does."""
        now = time.time()
        open_lines = exists().where(lines.c.batch_id == batches.c.id, lines.c.status.in_(OPEN))
        running = exists().where(
            lines.c.batch_id == batches.c.id,
            lines.c.status == "running",
            lines.c.lease_until >= now,
        )
        needs = or_(
            batches.c.status.in_(("validating", "finalizing")),
            (batches.c.status == "in_progress") & (~open_lines | (batches.c.expires_at <= now)),
            (batches.c.status == "cancelling") & ~running,
        )
        order, counted = (batches.c.created_at,), func.coalesce(batches.c.attempts, 0) + 1
        with self._begin() as db:
            return claim(db, batches, needs, order, owner, now + lease, attempts=counted)

    def start_batch(self, batch_id: str, owner: str, parsed: Sequence[Row], now: int) -> bool:
        """The validated lines queued, and the batch in progress (if this server still has
        it)."""
        with self._begin() as db:
            changed = db.execute(
                update(batches)
                .where(batches.c.id == batch_id, batches.c.owner == owner)
                .where(batches.c.status == "validating")
                .values(status="in_progress", in_progress_at=now, owner=None, lease_until=None)
            ).rowcount
            if not changed:  # cancelled meanwhile: the batch is free to be finalized at once
                db.execute(
                    update(batches)
                    .where(batches.c.id == batch_id, batches.c.owner == owner)
                    .values(owner=None, lease_until=None)
                )
            elif parsed:
                db.execute(
                    insert(lines),
                    [
                        {**row, "batch_id": batch_id, "status": "queued", "attempts": 0}
                        for row in parsed
                    ],
                )
        return bool(changed)

    def end_batch(
        self, batch_id: str, owner: str, values: Row, added: Sequence[Row], event: Row | None
    ) -> bool:
        """The batch's last word (failed, completed, expired, cancelled): its output files'
        rows, its status and times, and the webhook event announcing it, together."""
        with self._begin() as db:
            changed = db.execute(
                update(batches)
                .where(batches.c.id == batch_id, batches.c.owner == owner)
                .values(**values, owner=None, lease_until=None)
            ).rowcount
            if changed:
                for row in added:
                    db.execute(insert(files).values(**row))
                if event is not None:
                    db.execute(insert(events).values(**event))
                counts = _counts(db, batch_id)
                db.execute(
                    update(batches).where(batches.c.id == batch_id).values(request_counts=counts)
                )
                db.execute(delete(lines).where(lines.c.batch_id == batch_id))
        return bool(changed)

    def expire_open_lines(self, batch_id: str, output: Callable[[Row], Row]) -> None:
        """Lines of an expired batch that never ran: each failed with `output(line)`."""
        with self._begin() as db:
            query = select(lines).where(lines.c.batch_id == batch_id, lines.c.status.in_(OPEN))
            for row in db.execute(query).mappings().all():
                db.execute(
                    update(lines)
                    .where(lines.c.batch_id == batch_id, lines.c.idx == row["idx"])
                    .values(status="done", failed=True, output=output(dict(row)), owner=None)
                )

    def done_lines(self, batch_id: str) -> list[Row]:
        query = (
            select(lines.c.idx, lines.c.failed, lines.c.output)
            .where(lines.c.batch_id == batch_id, lines.c.status == "done")
            .order_by(lines.c.idx)
        )
        with self._read() as db:
            return [dict(row) for row in db.execute(query).mappings()]

    # lines: the queue

    def claim_line(self, owner: str, lease: float) -> Row | None:
        """The first line no server holds, of the oldest batch in progress, with its
        batch's endpoint; its attempts counted (the runner gives up a line claimed too often:
        its servers died with it)."""
        now = time.time()
        free = or_(lines.c.lease_until.is_(None), lines.c.lease_until < now)
        query = (
            select(lines.c.batch_id, lines.c.idx)
            .join(batches, batches.c.id == lines.c.batch_id)
            .where(batches.c.status == "in_progress", batches.c.expires_at > now)
            .where(lines.c.status.in_(OPEN), free)
            .order_by(batches.c.created_at, lines.c.idx)
            .limit(1)
            .with_for_update(skip_locked=True, of=lines)
        )
        with self._begin() as db:
            found = db.execute(query).first()
            if found is None:
                return None
            key = (lines.c.batch_id == found.batch_id) & (lines.c.idx == found.idx)
            taken = db.execute(
                update(lines)
                .where(key, free)
                .values(
                    status="running",
                    owner=owner,
                    lease_until=now + lease,
                    attempts=lines.c.attempts + 1,
                )
            ).rowcount
            if not taken:
                return None
            row = (
                db.execute(
                    select(lines, batches.c.endpoint)
                    .join(batches, batches.c.id == lines.c.batch_id)
                    .where(key)
                )
                .mappings()
                .one()
            )
            return dict(row)

    def renew_line(self, batch_id: str, idx: int, owner: str, lease: float) -> bool:
        """The line's lease extended; False when this server no longer holds it, or its batch
        is no longer in progress (cancelled, expired): its work is then of no use."""
        key = (lines.c.batch_id == batch_id) & (lines.c.idx == idx) & (lines.c.owner == owner)
        in_progress = exists().where(batches.c.id == batch_id, batches.c.status == "in_progress")
        with self._begin() as db:
            renewed = db.execute(
                update(lines)
                .where(key, lines.c.status == "running", in_progress)
                .values(lease_until=time.time() + lease)
            ).rowcount
            if not renewed:
                db.execute(
                    update(lines)
                    .where(key, lines.c.status == "running")
                    .where(~in_progress)
                    .values(status="cancelled", owner=None, lease_until=None)
                )
        return bool(renewed)

    def finish_line(self, batch_id: str, idx: int, owner: str, failed: bool, output: Row) -> bool:
        key = (lines.c.batch_id == batch_id) & (lines.c.idx == idx) & (lines.c.owner == owner)
        with self._begin() as db:
            return bool(
                db.execute(
                    update(lines)
                    .where(key, lines.c.status == "running")
                    .values(
                        status="done", failed=failed, output=output, owner=None, lease_until=None
                    )
                ).rowcount
            )

    def release_line(self, batch_id: str, idx: int, owner: str, delay: float) -> None:
        """The line back in the queue, for any server to take after `delay` seconds. This claim
        is not counted among its attempts: the server gave it back (the engine was full, the
        server stopping) rather than died or lost it."""
        key = (lines.c.batch_id == batch_id) & (lines.c.idx == idx) & (lines.c.owner == owner)
        with self._begin() as db:
            db.execute(
                update(lines)
                .where(key, lines.c.status == "running")
                .values(
                    status="queued",
                    owner=None,
                    lease_until=time.time() + delay,
                    attempts=lines.c.attempts - 1,
                )
            )

    def queued_lines(self) -> Mapping[str, int]:
        """How many lines of the batches in progress are queued, running and done."""
        query = (
            select(lines.c.status, func.count())
            .join(batches, batches.c.id == lines.c.batch_id)
            .where(batches.c.status == "in_progress")
            .group_by(lines.c.status)
        )
        with self._read() as db:
            return dict(db.execute(query).all())


def claim(
    db: Connection,
    table: Table,
    needs: Any,
    order: Sequence[Any],
    owner: str,
    until: float,
    **values: Any,
) -> Row | None:
    """The first row of `table` (by `order`) that `needs` selects and no server holds, now
    held by `owner` until `until` (and `values` set): a compare-and-set on its lease, so that
    of two servers only one gets it (PostgreSQL also skips rows another has locked). None when
    none is free."""
    now = time.time()
    free = or_(table.c.lease_until.is_(None), table.c.lease_until < now)
    query = select(table.c.id).where(needs, free).order_by(*order).limit(1)
    found = db.execute(query.with_for_update(skip_locked=True)).scalar()
    if found is None:
        return None
    taken = (
        update(table)
        .where(table.c.id == found, free)
        .values(owner=owner, lease_until=until, **values)
    )
    if not db.execute(taken).rowcount:
        return None
    return dict(db.execute(select(table).where(table.c.id == found)).mappings().one())


def _alive() -> Any:
    return or_(files.c.expires_at.is_(None), files.c.expires_at > time.time())


def _counts(db: Connection, batch_id: str) -> dict[str, int]:
    """OpenAI's `request_counts`: every line, those answered, those that failed."""
    query = (
        select(lines.c.status, lines.c.failed, func.count())
        .where(lines.c.batch_id == batch_id)
        .group_by(lines.c.status, lines.c.failed)
    )
    counts = {"total": 0, "completed": 0, "failed": 0}
    for status, failed, count in db.execute(query).all():
        counts["total"] += count
        if status == "done":
            counts["failed" if failed else "completed"] += count
    return counts


def _page(
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
