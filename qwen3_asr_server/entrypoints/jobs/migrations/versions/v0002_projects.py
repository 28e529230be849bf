"""Projects and keys: whose each file, reservation, batch and webhook event is (none: the
project `default`'s, as every row before this revision), the key that made a batch, and the
usage table (seconds of audio by the minute, key, project and model)."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    for table in ("files", "reservations", "batches", "events"):
        op.add_column(table, sa.Column("project", sa.String(64)))
    op.add_column("batches", sa.Column("api_key", sa.String(64)))
    op.create_table(
        "usage",
        sa.Column("minute", sa.Integer, primary_key=True),
        sa.Column("api_key", sa.String(64), primary_key=True),
        sa.Column("project", sa.String(64), primary_key=True),
        sa.Column("model", sa.String(128), primary_key=True),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
    )
