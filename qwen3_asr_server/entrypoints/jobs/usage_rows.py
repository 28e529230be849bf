"""The usage table's rows: each process adds what it tallied (an upsert that adds, so that the
workers and servers sharing a database add up), and the usage page reads them back."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from ...observability.usage import Minutes
from .database import Database, Row
from .schema import usage


class UsageRows(Database):
    def add_usage(self, minutes: Minutes, model: str) -> None:
        """What one process tallied, added to what the table holds."""
        rows = [
            {
                "minute": minute,
                "api_key": key or "",
                "project": project,
                "model": model,
                "seconds": seconds,
                "requests": requests,
            }
            for (minute, key, project), (seconds, requests) in minutes.items()
        ]
        if not rows:
            return
        with self._begin() as db:
            dialect = postgresql if db.dialect.name == "postgresql" else sqlite
            query = dialect.insert(usage)
            query = query.on_conflict_do_update(
                index_elements=[usage.c.minute, usage.c.api_key, usage.c.project, usage.c.model],
                set_={
                    "seconds": usage.c.seconds + query.excluded.seconds,
                    "requests": usage.c.requests + query.excluded.requests,
                },
            )
            db.execute(query, rows)

    def usage(
        self,
        start: int,
        end: int,
        keys: Sequence[str],
        projects: Sequence[str],
        models: Sequence[str],
    ) -> list[Row]:
        """The minutes from `start` until `end`, of these keys, projects and models (all of
        them when none is named)."""
        query = select(usage).where(usage.c.minute >= start, usage.c.minute < end)
        for column, named in ((usage.c.api_key, keys), (usage.c.project, projects)):
            if named:
                query = query.where(column.in_(list(named)))
        if models:
            query = query.where(usage.c.model.in_(list(models)))
        with self._read() as db:
            return [dict(row) for row in db.execute(query.order_by(usage.c.minute)).mappings()]
