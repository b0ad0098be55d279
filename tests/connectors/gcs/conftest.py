"""Fixtures for the gcs connector: one fake-gcs-server per test session (worker), a
fresh bucket per test, and a fault-injecting proxy in front of the server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from faultproxy import FaultProxy, fault_proxy
from gcs_support import GcsServer, fake_gcs_server


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsServer]:
    with fake_gcs_server(tmp_path_factory.mktemp("fake-gcs")) as server:
        yield server


@pytest.fixture
def bucket(gcs_server: GcsServer) -> str:
    return gcs_server.bucket()


@pytest.fixture
def proxy(gcs_server: GcsServer) -> Iterator[FaultProxy]:
    with fault_proxy(gcs_server.url) as running:
        yield running
