"""The stored files' rows, and the room held for files while their bytes are written, so
that `--storage-quota-mb` holds however many uploads and batch outputs arrive at once, in
however many processes or servers. The check and the hold are one transaction: SQLite's
writers take its one write lock at their start (`database`), PostgreSQL's quota checks wait
for each other on an advisory lock. A file becomes a row only once its bytes are whole; the
room held for one whose writer died lapses after `RESERVE_SECONDS`, and the sweeper removes
it and whatever of its bytes reached the disk."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, insert, or_, select

from .database import Database, Row, page
from .schema import files, owned, reservations

# Longer than writing any file takes (a local copy of at most --max-file-mb, or a batch's
# outputs): a live writer's room never lapses.
RESERVE_SECONDS = 3600.0
QUOTA_LOCK = 0x71756F7461  # PostgreSQL's advisory lock for the quota: "quota"


Quotas = tuple[int, int | None]  # bytes: the server's, and the project's (None: none of its own)


@dataclass(frozen=True)
class Full:
    """A quota that has no room: its bytes, those stored and held, and whether it is the
    project's."""

    quota: int
    stored: int
    project: bool


class FileRows(Database):
    def add_file(self, row: Row) -> None:
        with self._begin() as db:
            keep(db, [row])

    def file(self, file_id: str, project: str) -> Row | None:
        """The project's file, unless it expired (the sweeper may not have deleted it yet)."""
        query = select(files).where(
            files.c.id == file_id, owned(files.c.project, project), _alive()
        )
        with self._read() as db:
            found = db.execute(query).mappings().first()
        return dict(found) if found else None

    def files(
        self, project: str, purpose: str | None, after: str | None, limit: int, asc: bool
    ) -> list[Row]:
        query = select(files).where(owned(files.c.project, project), _alive())
        if purpose:
            query = query.where(files.c.purpose == purpose)
        with self._read() as db:
            return page(db, query, files, after, limit, asc)

    def delete_file(self, file_id: str, project: str | None) -> bool:
        """The file deleted: the project's (None: whoever's, as the sweeper deletes)."""
        query = delete(files).where(files.c.id == file_id)
        if project is not None:
            query = query.where(owned(files.c.project, project))
        with self._begin() as db:
            return db.execute(query).rowcount == 1

    def stored_bytes(self, project: str | None = None) -> int:
        """The files' bytes and the room held for files being written: the project's, or
        everyone's."""
        with self._read() as db:
            return _stored(db, project)

    def expired_files(self, now: float) -> list[str]:
        query = select(files.c.id).where(files.c.expires_at.is_not(None), files.c.expires_at <= now)
        with self._read() as db:
            return list(db.execute(query).scalars())

    def reserve(self, sizes: Mapping[str, int], project: str, quotas: Quotas) -> Full | None:
        """Room held for the project's files `sizes` names (id: bytes), all of them or none:
        None when they fit with what is stored and held in the server's quota and in the
        project's (if it has one), else the quota they do not fit in."""
        with self._begin() as db:
            if db.dialect.name == "postgresql":
                db.execute(select(func.pg_advisory_xact_lock(QUOTA_LOCK)))
            adding = sum(sizes.values())
            server, own = quotas
            for scope, quota in ((None, server), (project, own)):
                if quota is not None and (stored := _stored(db, scope)) + adding > quota:
                    return Full(quota, stored, scope is not None)
            until = time.time() + RESERVE_SECONDS
            rows = [
                {"id": file_id, "bytes": size, "until": until, "project": project}
                for file_id, size in sizes.items()
            ]
            db.execute(insert(reservations), rows)
        return None

    def release(self, file_ids: Iterable[str]) -> None:
        """The room held for files that will not be stored given back."""
        with self._begin() as db:
            db.execute(delete(reservations).where(reservations.c.id.in_(list(file_ids))))

    def lapsed_reservations(self, now: float) -> list[str]:
        """The room held by writers that died given back: the ids of their files."""
        with self._begin() as db:
            query = select(reservations.c.id).where(reservations.c.until <= now)
            lapsed = list(db.execute(query).scalars())
            if lapsed:
                db.execute(delete(reservations).where(reservations.c.id.in_(lapsed)))
        return lapsed


def keep(db: Connection, rows: Sequence[Row]) -> None:
    """Files whose bytes are written made stored: their rows in, the room held for them
    given back, in `db`'s transaction."""
    if rows:
        db.execute(delete(reservations).where(reservations.c.id.in_([row["id"] for row in rows])))
        db.execute(insert(files), list(rows))


def _stored(db: Connection, project: str | None) -> int:
    held = select(func.coalesce(func.sum(reservations.c.bytes), 0)).where(
        reservations.c.until > time.time()
    )
    kept = select(func.coalesce(func.sum(files.c.bytes), 0))
    if project is not None:
        held = held.where(owned(reservations.c.project, project))
        kept = kept.where(owned(files.c.project, project))
    return int(db.execute(kept).scalar_one()) + int(db.execute(held).scalar_one())


def _alive() -> Any:
    return or_(files.c.expires_at.is_(None), files.c.expires_at > time.time())
