"""Fixtures for the API tests: a real `headwater serve` per module (see api_support)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from api_support import Server, make_workspace

from ports import free_port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("serve")
    with Server(make_workspace(root), free_port(), root / "server.log") as srv:
        yield srv
