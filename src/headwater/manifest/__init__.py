"""The manifest: the SQL truth of what each source holds and what each index applied.

Documents, revisions and ACLs, runs and checkpoints, leases, tombstones, failures (the
dead-letter queue), group memberships, index generations and per-index applied
revisions, in one database (SQLite or PostgreSQL, migrated by Alembic); plus the content
store of normalized texts. ``store.Manifest`` is the facade the sync runner commits to.
"""
