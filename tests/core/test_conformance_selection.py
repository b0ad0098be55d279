"""The conformance suites choose their checks from the plugin's declared capabilities.

A check that does not apply to a plugin is not defined on its conformance class, so it
is never run, never passes by a silent ``return`` and is never skipped (issue 24, 10).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest

from headwater.connectors.base import ConnectorCapabilities
from headwater.connectors.testing import ConnectorConformance
from headwater.sinks.base import SinkCapabilities
from headwater.sinks.qdrant import QdrantSink
from headwater.sinks.sqlite import SqliteSink
from headwater.sinks.testing import SinkConformance

WINDOW = "test_window_has_open_lower_bound"
NO_WINDOW = "test_an_unwindowed_connector_ignores_the_window"
LAZY, NOT_LAZY = "test_lazy_fetch", "test_no_fetch_ref_without_fetch"
ENUMERATE = "test_enumerate_equals_full_read"
KEYWORD, PERSISTS = "test_keyword_text_is_never_syntax", "test_data_persists_after_reopen"


class Plain:
    type_name: ClassVar[str] = "plain"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()

    def validate(self) -> None: ...

    def read(self, window: object, checkpoint: object, known: object) -> Iterator[object]:
        yield from ()


class Capable(Plain):
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(windowed=True)

    def enumerate(self) -> Iterator[str]:
        yield from ()

    def fetch(self, ref: str) -> bytes:
        return b""


def checks(cls: type) -> set[str]:
    return {name for name in dir(cls) if name.startswith("test_")}


def test_a_connector_gets_the_checks_of_its_capabilities_only() -> None:
    class TestPlain(ConnectorConformance, connector=Plain):  # type: ignore[arg-type]
        pass

    class TestCapable(ConnectorConformance, connector=Capable):  # type: ignore[arg-type]
        pass

    assert {NO_WINDOW, NOT_LAZY} <= checks(TestPlain)
    assert not {WINDOW, LAZY, ENUMERATE} & checks(TestPlain)
    assert {WINDOW, LAZY, ENUMERATE} <= checks(TestCapable)
    assert not {NO_WINDOW, NOT_LAZY} & checks(TestCapable)
    assert not {WINDOW, NO_WINDOW, LAZY, NOT_LAZY, ENUMERATE} & checks(ConnectorConformance)


def test_declared_capabilities_override_the_class_default() -> None:
    windowed = ConnectorCapabilities(windowed=True)

    class TestByOptions(  # type: ignore[arg-type]
        ConnectorConformance, connector=Plain, capabilities=windowed
    ):
        pass

    assert WINDOW in checks(TestByOptions) and NO_WINDOW not in checks(TestByOptions)
    assert TestByOptions.declared_capabilities == windowed


def test_a_sink_gets_the_keyword_and_persistence_checks_it_declares() -> None:
    class TestMemoryVectors(SinkConformance, sink=QdrantSink):
        pass

    class TestPersistentKeyword(SinkConformance, sink=SqliteSink):
        @pytest.fixture
        def reopen(self) -> None: ...

    class TestInherited(TestPersistentKeyword):
        pass

    assert QdrantSink.capabilities == SinkCapabilities(vector=True, keyword=False)
    assert not {KEYWORD, PERSISTS} & checks(TestMemoryVectors)
    assert {KEYWORD, PERSISTS} <= checks(TestPersistentKeyword)
    assert {KEYWORD, PERSISTS} <= checks(TestInherited)
    assert not {KEYWORD, PERSISTS} & checks(SinkConformance)


def test_a_collected_suite_class_must_name_its_plugin() -> None:
    with pytest.raises(TypeError, match="connector=MyConnector"):

        class TestNoConnector(ConnectorConformance):
            pass

    with pytest.raises(TypeError, match="sink=MySink"):

        class TestNoSink(SinkConformance):
            pass

    class _Shared(SinkConformance):  # a helper base pytest does not collect: allowed
        pass
