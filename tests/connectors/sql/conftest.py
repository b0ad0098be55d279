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


@pytest.fixture
def failing_function(db: Database) -> Iterator[str]:
    """A SQL function that fails for id 3, as a source that breaks half way."""
    name = unique("boom")
    if db.kind == "postgresql":
        db.execute(
            f"CREATE FUNCTION {name}(i integer) RETURNS integer LANGUAGE plpgsql AS $$ "
            "BEGIN IF i = 3 THEN RAISE EXCEPTION 'row 3 broke'; END IF; RETURN i; END $$"
        )
    else:
        db.execute(
            f"CREATE FUNCTION {name}(i INT) RETURNS INT DETERMINISTIC BEGIN "
            "IF i = 3 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'row 3 broke'; END IF; "
            "RETURN i; END"
        )
    yield name
    db.execute(f"DROP FUNCTION {name}")
