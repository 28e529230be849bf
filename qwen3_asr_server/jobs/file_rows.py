"""The stored files' rows: the part of the store that the Files API and the sweeper use."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, func, insert, or_, select

from .database import Database, Row, page
from .schema import files


class FileRows(Database):
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
            return page(db, query, files, after, limit, asc)

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


def _alive() -> Any:
    return or_(files.c.expires_at.is_(None), files.c.expires_at > time.time())
