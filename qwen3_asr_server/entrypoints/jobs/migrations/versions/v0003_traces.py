"""The W3C `traceparent` of the request that created a batch, so that each of its lines, a
trace of its own, links back to it (`--otlp-traces-endpoint`)."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.add_column("batches", sa.Column("traceparent", sa.String(64)))
