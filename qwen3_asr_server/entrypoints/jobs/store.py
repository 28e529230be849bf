"""Where jobs are kept: SQLite under `--data-dir` by default, or the PostgreSQL database that
`--jobs-db` names, which several servers then share. One SQLAlchemy Core code path serves
both: claims are a compare-and-set UPDATE on a row's lease (PostgreSQL also skips rows that
another server has locked), which both databases make atomic. The files' rows, and the room
reserved for files being written, are `file_rows`' part of the store.

Why no queue library: the ones that keep a queue in a database do it in PostgreSQL only, or
need a broker (Redis) beside it; here a line's claim, its answer and the batch's counts must
change together, in the database that already holds them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    Table,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)

from .database import Row, page
from .file_rows import FileRows, keep
from .schema import batches, events, lines, owned
from .usage_rows import UsageRows

OPEN = ("queued", "running")  # a line's states before it is done (or cancelled)


class Store(FileRows, UsageRows):
    """The jobs' rows. Every method is one transaction."""

    # batches

    def add_batch(self, row: Row) -> None:
        with self._begin() as db:
            db.execute(insert(batches).values(**row))

    def batch(self, batch_id: str, project: str) -> Row | None:
        query = select(batches).where(batches.c.id == batch_id, owned(batches.c.project, project))
        with self._read() as db:
            found = db.execute(query).mappings().first()
            return {**found, "counts": _counts(db, batch_id)} if found else None

    def batches(self, project: str, after: str | None, limit: int) -> list[Row]:
        query = select(batches).where(owned(batches.c.project, project))
        with self._read() as db:
            rows = page(db, query, batches, after, limit, asc=False)
            return [{**row, "counts": _counts(db, row["id"])} for row in rows]

    def cancel(self, batch_id: str, project: str, now: int) -> bool:
        """The project's batch, if still at work, goes to `cancelling`; its lines not started
        are dropped."""
        with self._begin() as db:
            changed = db.execute(
                update(batches)
                .where(batches.c.id == batch_id, owned(batches.c.project, project))
                .where(batches.c.status.in_(("validating", "in_progress")))
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
                keep(db, added)
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
        batch's endpoint and project; its attempts counted (the runner gives up a line
        claimed too often: its servers died with it)."""
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
                    select(
                        lines,
                        batches.c.endpoint,
                        batches.c.project,
                        batches.c.api_key,
                        batches.c.traceparent,
                    )
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
