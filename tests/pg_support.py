"""Fresh PostgreSQL databases for tests (a module with a unique name: every test
folder has its own conftest.py, so `from conftest import …` is ambiguous)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy import create_engine, text


def create_pg_database(server_url: str) -> tuple[str, Callable[[], None]]:
    name = f"hw_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(f"{server_url}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return f"{server_url}/{name}", drop
