"""Shared fixtures: real manifests (SQLite and PostgreSQL) and workspaces on disk.

``manifest_url`` is parametrized over both engines; the PostgreSQL side creates a fresh
database on the server at 127.0.0.1:5432 for the test session and drops it afterwards.
The server must be running (``.ci/run`` starts it): a missing server fails, it does not
skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from pg_support import create_pg_database

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

PG_ADMIN_URL = os.environ.get(
    "HEADWATER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A URL prefix for fresh databases; each user of it creates its own database."""
    engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("select 1"))
    engine.dispose()
    yield PG_ADMIN_URL.rsplit("/", 1)[0]


@pytest.fixture(params=["sqlite", "postgres"])
def manifest_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state' / 'manifest.db'}"
        return
    server = request.getfixturevalue("postgres_server_url")
    url, drop = create_pg_database(server)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small mixed corpus: Markdown, text and HTML files in nested folders."""
    root = tmp_path / "corpus"
    (root / "guides").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / "guides" / "vacation.md").write_text(
        "# Vacation policy\n\nEvery employee gets 25 vacation days per year.\n\n"
        "## Carry over\n\nUp to five unused days carry over to the next year.\n"
    )
    (root / "guides" / "expenses.md").write_text(
        "# Expenses\n\nThe reimbursement limit for meals is 60 euros per day.\n"
    )
    (root / "notes" / "deploy.txt").write_text(
        "Deploys happen on Tuesdays. Rotate the database credentials every 90 days.\n"
    )
    (root / "notes" / "welcome.html").write_text(
        "<html><head><title>Welcome</title></head><body><main><h1>Welcome</h1>"
        "<p>Welcome to Acme Robotics. Our robots dock themselves every night.</p>"
        "<p>The office opens at eight in the morning on weekdays.</p></main></body></html>"
    )
    (root / "readme.md").write_text("# Readme\n\nThis corpus is used by the tests.\n")
    return root


# -- test tiers ------------------------------------------------------------------------
# `bash scripts/test.sh --fast` runs the unit tier: in-process tests that need no server
# (`-m "not server and not process and not slow and not model"`). Markers set here:
# - `server`: the test reaches a server: PostgreSQL (a `postgres_server_url` fixture or a
#   postgres/mariadb parameter), or its module talks to Redis, RabbitMQ, MariaDB, NATS,
#   Dovecot or a browser (its source names them);
# - `process`: its module starts processes (`headwater` subprocesses, `serve`, signals).
SERVER_PARAMS = {"postgres", "postgresql", "mariadb", "redis", "amqp"}
SERVER_DIRS = ("executor", "connectors/sql", "connectors/imap", "roundtrip")
SERVER_HINTS = (
    "127.0.0.1:6379", "127.0.0.1:5672", "127.0.0.1:3306", "127.0.0.1:4222",
    "127.0.0.1:5432", "chromium", "playwright", "torture.py",
)  # fmt: skip
PROCESS_DIRS = ("api", "roundtrip")  # API: a real `headwater serve`; roundtrip: emulators
PROCESS_HINTS = ("subprocess", "Popen", "sys.executable", "os.fork", "multiprocessing")
_TESTS = Path(__file__).resolve().parent
_sources: dict[Path, str] = {}


def _module_mentions(path: Path, hints: tuple[str, ...]) -> bool:
    if path not in _sources:
        _sources[path] = path.read_text(encoding="utf-8", errors="replace")
    return any(hint in _sources[path] for hint in hints)


def _relative(item: pytest.Item) -> str:
    path = Path(str(item.fspath))
    return path.relative_to(_TESTS).as_posix() if path.is_relative_to(_TESTS) else ""


def _needs_server(item: pytest.Item) -> bool:
    if "postgres_server_url" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(
        isinstance(v, str) and v in SERVER_PARAMS for v in callspec.params.values()
    ):
        return True
    if any(_relative(item).startswith(d + "/") for d in SERVER_DIRS):
        return True
    return _module_mentions(Path(str(item.fspath)), SERVER_HINTS)


def _starts_processes(item: pytest.Item) -> bool:
    if any(_relative(item).startswith(d + "/") for d in PROCESS_DIRS):
        return True
    return _module_mentions(Path(str(item.fspath)), PROCESS_HINTS)


# -- scheduling --------------------------------------------------------------------------
# `scripts/test.sh` runs files on parallel workers (`--dist loadfile --no-loadscope-reorder`),
# handed out in collection order. The long poles go first, so they overlap the many short
# files instead of running alone at the end; the other files follow, those with the most
# tests first (xdist's own default order).
LONG_POLES = (  # longest first, as measured (`--durations`, summed per file)
    "correctness/test_mutants.py",  # ~60 mutants, each a pytest subprocess
    "rebuild/test_rebuild_cli.py",
    "scheduler/test_scheduler_sigint.py",
    "executor/test_celery_workers.py",
    "rebuild/test_generation_states.py",
    "correctness/test_index_identity.py",
    "roundtrip/test_roundtrip_local.py",  # 10 connectors x 500 items
    "roundtrip/test_roundtrip_saas.py",  # 5 connectors x 500 items
    "roundtrip/test_roundtrip_vendors.py",  # 6 connectors x 500 items
    "roundtrip/test_roundtrip_messages.py",  # 5 connectors x 500 items (Dovecot)
    "correctness/test_crash_matrix.py",
    "api/test_api_push_workers.py",
    "executor/test_celery_no_wait_and_dlq.py",
    "executor/test_nats_executor.py",
    "executor/test_nats_failures.py",
    "core/test_cli_sync_concurrent.py",
    "pipeline/test_embed_local.py",
    "scheduler/test_scheduler_processes.py",
    "rebuild/test_rollback.py",
    "core/test_lease_freeze.py",
    "scheduler/test_scheduler_behaviour.py",
    "correctness/test_torture.py",
)


def _schedule_rank(item: pytest.Item, sizes: dict[str, int]) -> tuple[int, int]:
    relative = _relative(item)
    if relative in LONG_POLES:
        return LONG_POLES.index(relative), 0
    return len(LONG_POLES), -sizes[relative]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _needs_server(item):
            item.add_marker(pytest.mark.server)
        if _starts_processes(item):
            item.add_marker(pytest.mark.process)
    sizes: dict[str, int] = {}
    for item in items:
        sizes[_relative(item)] = sizes.get(_relative(item), 0) + 1
    items.sort(key=lambda item: _schedule_rank(item, sizes))  # stable: file order is kept
