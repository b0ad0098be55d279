"""The ``sql`` connector: rows of a PostgreSQL or MySQL/MariaDB table or query.

Object ids come from the id columns, version hints hash what a row shows (after its
``updated_at`` when there is one), reads page by keyset, and deletes are found by
``enumerate()``. See docs/connectors/sql.md.
"""

from headwater.connectors.sql._connector import SqlConnector, SqlOptions

__all__ = ["SqlConnector", "SqlOptions"]
