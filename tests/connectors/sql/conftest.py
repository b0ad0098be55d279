"""Fixtures for the sql connector: the real PostgreSQL and MariaDB on this machine.

Every test that takes ``docs`` gets its own uniquely named table, dropped afterwards;
tests taking ``db`` run once per server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sql_support import ENGINE_URLS, URLS, Database, create_docs_table, unique
from sqlalchemy.pool import NullPool


@pytest.fixture(scope="session", params=["postgresql", "mariadb"])
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    kind = str(request.param)
    engine = sa.create_engine(ENGINE_URLS[kind], poolclass=NullPool)
    yield Database(kind=kind, url=URLS[kind], engine=engine)
    engine.dispose()


@pytest.fixture
def docs(db: Database) -> Iterator[str]:
    name = unique("docs")
    table = create_docs_table(db, name)
    yield name
    table.drop(db.engine, checkfirst=True)
