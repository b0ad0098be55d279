"""Fixtures for the azure_blob connector: one Azurite per test session (worker), a fresh
container per test, and a fault-injecting proxy in front of Azurite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure_support import Azurite, azurite
from faultproxy import FaultProxy, fault_proxy


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    with azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture
def container(azurite_server: Azurite) -> str:
    return azurite_server.container()


@pytest.fixture
def proxy(azurite_server: Azurite) -> Iterator[FaultProxy]:
    upstream = azurite_server.url.rsplit("/", 1)[0]
    with fault_proxy(upstream) as running:
        yield running
