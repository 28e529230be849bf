"""The jobs database brought to this release's tables with Alembic, before the server uses it:
the revisions it lacks run in one transaction (on PostgreSQL under a lock, so that servers
starting together upgrade it once), and a database a newer release wrote is refused, since
this release would misread its rows."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, inspect, text

from ...errors import LaunchError

logger = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).with_name("migrations")
LOCK = 0x7177_656E_6A6F_6273  # the advisory lock PostgreSQL holds while one server upgrades


class NewerDatabase(LaunchError):
    """The database is at a revision this release does not have."""


def upgrade(connection: Connection, where: str) -> None:
    """`connection`'s database at this release's revision (in its transaction); `where` names
    it in the log line and in the refusal."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": LOCK})
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    script = ScriptDirectory.from_config(config)
    head = script.get_current_head()
    found = MigrationContext.configure(connection).get_current_revision()
    if found == head:
        return
    if found is not None:
        try:
            script.get_revision(found)
        except CommandError:
            raise NewerDatabase(
                f"the jobs database ({where}) is at schema revision {found!r}, which a newer "
                f"release of qwen3-asr-server wrote; this one knows revisions up to {head!r}: "
                "run that release, or give this one another database (--jobs-db, --data-dir)"
            ) from None
    made = found is None and not inspect(connection).has_table("files")
    command.upgrade(config, "head")
    if made:
        logger.info("jobs database (%s) made at schema revision %s", where, head)
    else:
        logger.info(
            "jobs database (%s) upgraded from schema revision %s to %s",
            where,
            found or "none (a release before revisions)",
            head,
        )


def upgrade_engine(engine: Engine) -> None:
    """`engine`'s database upgraded in a transaction of its own."""
    with engine.begin() as connection:
        upgrade(connection, engine.url.render_as_string(hide_password=True))
