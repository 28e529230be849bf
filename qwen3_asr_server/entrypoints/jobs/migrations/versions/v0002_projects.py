"""Projects and keys: whose each file, reservation, batch and webhook event is (none: the
project `default`'s, as every row before this revision), the key that made a batch, and the
usage table (seconds of audio by the minute, key, project and model). A database that a
development build made before revisions may hold some of these already: they are kept."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"

COLUMNS = (
    ("files", "project"),
    ("reservations", "project"),
    ("batches", "project"),
    ("batches", "api_key"),
    ("events", "project"),
)


def upgrade() -> None:
    found = sa.inspect(op.get_bind())
    for table, column in COLUMNS:
        if column not in {each["name"] for each in found.get_columns(table)}:
            op.add_column(table, sa.Column(column, sa.String(64)))
    if found.has_table("usage"):
        return
    op.create_table(
        "usage",
        sa.Column("minute", sa.Integer, primary_key=True),
        sa.Column("api_key", sa.String(64), primary_key=True),
        sa.Column("project", sa.String(64), primary_key=True),
        sa.Column("model", sa.String(128), primary_key=True),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
    )
