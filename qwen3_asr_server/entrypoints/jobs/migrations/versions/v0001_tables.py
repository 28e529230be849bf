"""The tables as the releases before versioning made them (files, reservations, batches, lines,
webhook events). A database such a release made is adopted as it is: a table it lacks is made,
and a column it lacks (an older release's) is added, nullable."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

tables = sa.MetaData()
sa.Table(
    "files",
    tables,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("purpose", sa.String(32), nullable=False),
    sa.Column("filename", sa.Text, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.Integer, nullable=False, index=True),
    sa.Column("expires_at", sa.Integer, index=True),
)
sa.Table(
    "reservations",
    tables,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("until", sa.Float, nullable=False, index=True),
)
sa.Table(
    "batches",
    tables,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("endpoint", sa.String(64), nullable=False),
    sa.Column("input_file_id", sa.String(64), nullable=False),
    sa.Column("completion_window", sa.String(16), nullable=False),
    sa.Column("metadata", sa.JSON),
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("created_at", sa.Integer, nullable=False, index=True),
    sa.Column("expires_at", sa.Integer, nullable=False),
    *(
        sa.Column(name, sa.Integer)
        for name in (
            "in_progress_at",
            "finalizing_at",
            "completed_at",
            "failed_at",
            "expired_at",
            "cancelling_at",
            "cancelled_at",
        )
    ),
    sa.Column("output_file_id", sa.String(64)),
    sa.Column("error_file_id", sa.String(64)),
    sa.Column("output_expires_after", sa.Integer),
    sa.Column("errors", sa.JSON),
    sa.Column("request_counts", sa.JSON),
    sa.Column("attempts", sa.Integer),
    sa.Column("owner", sa.String(128)),
    sa.Column("lease_until", sa.Float),
)
sa.Table(
    "lines",
    tables,
    sa.Column("batch_id", sa.String(64), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True),
    sa.Column("custom_id", sa.Text, nullable=False),
    sa.Column("body", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(128)),
    sa.Column("lease_until", sa.Float),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("failed", sa.Boolean),
    sa.Column("output", sa.JSON),
    sa.Index("lines_by_status", "batch_id", "status"),
)
sa.Table(
    "events",
    tables,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("body", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Integer, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_at", sa.Float, nullable=False, index=True),
    sa.Column("delivered_at", sa.Integer),
    sa.Column("gave_up_at", sa.Integer),
    sa.Column("owner", sa.String(128)),
    sa.Column("lease_until", sa.Float),
)


def upgrade() -> None:
    connection = op.get_bind()
    found = sa.inspect(connection)
    for table in tables.sorted_tables:
        if not found.has_table(table.name):
            table.create(connection)
            continue
        have = {column["name"] for column in found.get_columns(table.name)}
        for column in table.columns:
            if column.name not in have:
                op.add_column(table.name, sa.Column(column.name, column.type))
