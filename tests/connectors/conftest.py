"""Shared fixtures for connector tests: a real local HTTP server (see httpserver.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from httpserver import LocalHttpServer


@pytest.fixture
def http_server() -> Iterator[LocalHttpServer]:
    """A fresh HTTP server on 127.0.0.1 with a free port, stopped after the test."""
    with LocalHttpServer() as server:
        yield server
