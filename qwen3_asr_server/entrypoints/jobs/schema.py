"""The jobs' tables, as SQLAlchemy Core declares them: one declaration for SQLite and
PostgreSQL. A row of `lines` is the unit of work and of the queue: a server claims it by
writing its name and a lease into it, and its output line stays in it until the batch's
output file is written, so that each `custom_id` is answered exactly once whoever ran it.

The tables as this release reads and writes them; a database is brought to them by the
revisions in `migrations/versions/` (`migrate`), and a change here needs one there."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    or_,
)
from sqlalchemy.sql.elements import ColumnElement

from ..middleware.keys import DEFAULT

metadata = MetaData()

files = Table(
    "files",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("purpose", String(32), nullable=False),
    Column("filename", Text, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("created_at", Integer, nullable=False, index=True),
    Column("expires_at", Integer, index=True),
    Column("project", String(64)),  # whose (`owned`)
)

# Room held for a file while its bytes are written: counted with the files' bytes against
# `--storage-quota-mb`, listed nowhere, and turned into its `files` row once written.
reservations = Table(
    "reservations",
    metadata,
    Column("id", String(64), primary_key=True),  # the file's, once it is stored
    Column("bytes", BigInteger, nullable=False),
    Column("until", Float, nullable=False, index=True),  # a writer dead by then held it
    Column("project", String(64)),
)

batches = Table(
    "batches",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("endpoint", String(64), nullable=False),
    Column("input_file_id", String(64), nullable=False),
    Column("completion_window", String(16), nullable=False),
    Column("metadata", JSON),
    Column("status", String(16), nullable=False, index=True),
    Column("created_at", Integer, nullable=False, index=True),
    Column("expires_at", Integer, nullable=False),
    Column("in_progress_at", Integer),
    Column("finalizing_at", Integer),
    Column("completed_at", Integer),
    Column("failed_at", Integer),
    Column("expired_at", Integer),
    Column("cancelling_at", Integer),
    Column("cancelled_at", Integer),
    Column("output_file_id", String(64)),
    Column("error_file_id", String(64)),
    Column("output_expires_after", Integer),  # seconds, from the output's creation
    Column("errors", JSON),  # the input file's problems, when it failed validation
    Column("request_counts", JSON),  # once it ended (its lines are gone then)
    Column("attempts", Integer),  # times it was claimed (to validate, then to finalize)
    # the server validating or finalizing it, and until when
    Column("owner", String(128)),
    Column("lease_until", Float),
    Column("project", String(64)),  # whose (`owned`); its lines read its project's files
    Column("api_key", String(64)),  # the name of the key that made it: its lines' usage
    Column("traceparent", String(64)),  # of the request that made it: its lines link to it
)

lines = Table(
    "lines",
    metadata,
    Column("batch_id", String(64), primary_key=True),
    Column("idx", Integer, primary_key=True),  # its line in the input file, from 0
    Column("custom_id", Text, nullable=False),
    Column("body", JSON, nullable=False),
    Column("status", String(16), nullable=False),  # queued, running, done
    Column("owner", String(128)),
    Column("lease_until", Float),
    Column("attempts", Integer, nullable=False, default=0),
    Column("failed", Boolean),  # done: whether its output goes to the error file
    Column("output", JSON),  # done: its line of the output (or error) file
    Index("lines_by_status", "batch_id", "status"),
)

events = Table(
    "events",
    metadata,
    Column("id", String(64), primary_key=True),  # webhook-id: the same on every attempt
    Column("body", JSON, nullable=False),
    Column("created_at", Integer, nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_at", Float, nullable=False, index=True),
    Column("delivered_at", Integer),
    Column("gave_up_at", Integer),  # retried until 72 h after it was created: never sent again
    Column("owner", String(128)),
    Column("lease_until", Float),
    Column("project", String(64)),  # whose batch it announces: where it is sent
)


# Seconds of audio transcribed, by the minute, key and project (`observability.usage`); a
# process adds what it tallied every few seconds, so several servers add up in one database.
usage = Table(
    "usage",
    metadata,
    Column("minute", Integer, primary_key=True),  # when it began, in seconds since the epoch
    Column("api_key", String(64), primary_key=True),  # "" for no key (Wyoming's)
    Column("project", String(64), primary_key=True),
    Column("model", String(128), primary_key=True),
    Column("seconds", Float, nullable=False),
    Column("requests", Integer, nullable=False),
)


def owned(column: Column[str], project: str) -> ColumnElement[bool]:
    """The rows of `project`. A row written before there were projects has none: it is the
    project `default`'s, as the one key of that server now is."""
    if project == DEFAULT:
        return or_(column == project, column.is_(None))
    return column == project
