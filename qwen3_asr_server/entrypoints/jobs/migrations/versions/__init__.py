"""The jobs database's revisions, oldest first. Each is written once and never changed: it
declares the tables as they were, not as `jobs.schema` has them now."""
