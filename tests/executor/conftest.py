"""Fixtures for the Celery executor tests: the connector test helpers on the path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "connectors"))
sys.path.insert(0, str(Path(__file__).parents[1] / "connectors" / "git"))

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text


@pytest.fixture
def pg_database(postgres_server_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database (the workers' shared manifest), dropped afterwards."""
    name = f"hw_celery_{uuid.uuid4().hex[:12]}"
    admin = create_engine(f"{postgres_server_url}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{postgres_server_url}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
