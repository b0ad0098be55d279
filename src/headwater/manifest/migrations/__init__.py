"""Alembic migrations of the manifest, applied automatically when a workspace opens."""
