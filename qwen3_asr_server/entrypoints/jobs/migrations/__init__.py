"""Alembic's script folder for the jobs database: `env.py` runs the revisions in `versions/`,
one file per change of the tables, on the connection `jobs.migrate` hands it."""
