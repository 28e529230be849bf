"""Alembic's environment: the revisions run on the connection (and in the transaction) that
`jobs.migrate.upgrade` was given, never on one of their own."""

from alembic import context

context.configure(connection=context.config.attributes["connection"])
with context.begin_transaction():
    context.run_migrations()
