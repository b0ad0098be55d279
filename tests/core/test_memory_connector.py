"""The test connector itself passes the shipped conformance suite."""

from __future__ import annotations

import uuid

import pytest

from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from memory_connector import SOURCES, Item, MemoryConnector, MemoryOptions, MemorySource


class TestMemoryConformance(ConnectorConformance, connector=MemoryConnector):
    @pytest.fixture
    def harness(self) -> ConnectorHarness:
        name, broken = uuid.uuid4().hex, uuid.uuid4().hex
        SOURCES[name] = MemorySource(items={f"k{n}": Item(f"p{n}", f"text {n}") for n in range(4)})
        SOURCES[broken] = MemorySource(reachable=False)
        failing = uuid.uuid4().hex  # the same items; read and enumerate break after two
        SOURCES[failing] = MemorySource(
            items=dict(SOURCES[name].items), fail_read_after=2, fail_enumerate_after=2
        )
        return ConnectorHarness(
            make=lambda: MemoryConnector(MemoryOptions(name=name)),
            make_broken=lambda: MemoryConnector(MemoryOptions(name=broken)),
            make_failing_listing=lambda: MemoryConnector(MemoryOptions(name=failing)),
        )
