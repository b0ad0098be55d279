"""A fresh PostgreSQL database for one benchmark run, dropped afterwards (even on error)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text

PG = os.environ.get("HW_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432")


@contextmanager
def database(stem: str) -> Iterator[str]:
    """Create ``{stem}_<random>`` on the server at ``PG``; yield its URL; drop it."""
    name = f"{stem}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(f"{PG}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{PG}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
