"""Fixtures for scheduler tests: `headwater run` processes reaped at the end, a PG manifest."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sched_helpers import Daemon


def _root_conftest() -> Any:
    """tests/conftest.py as a module (both conftests are named `conftest` on sys.path)."""
    path = Path(__file__).parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("headwater_tests_root_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def daemons() -> Iterator[Callable[..., Daemon]]:
    started: list[Daemon] = []

    def start(directory: Path, *args: str, env: dict[str, str] | None = None) -> Daemon:
        daemon = Daemon(directory, *args, env=env)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.communicate(timeout=30)


@pytest.fixture
def pg_url(postgres_server_url: str) -> Iterator[str]:
    url, drop = _root_conftest().create_pg_database(postgres_server_url)
    try:
        yield url
    finally:
        drop()
