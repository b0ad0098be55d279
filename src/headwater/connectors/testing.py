"""The shipped connector conformance suite.

A connector's own test file subclasses ``ConnectorConformance``, naming the connector
class, and provides one fixture, ``harness``, returning a ``ConnectorHarness``; every
contract check that its capabilities call for then runs for it (the others are not
defined on the class, so they never run):

    class TestMyConformance(ConnectorConformance, connector=MyConnector):
        @pytest.fixture
        def harness(self, tmp_path):
            return ConnectorHarness(make=lambda: MyConnector(...), make_broken=...)

Checks: the declared capabilities, full read, window filtering with an open lower bound
(``windowed``) or the window ignored (not), resume from every checkpoint, stable order,
``enumerate()`` equals a full read (``Enumerating``), every ``fetch_ref`` fetches
(``LazyFetching``) or none is given (not), known versions keep every id, readable
``validate()`` errors, and that a listing failing part way deletes nothing (the harness's
``make_failing_listing``). Requires pytest (a dev dependency).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

from headwater.connectors.base import (
    Connector,
    ConnectorCapabilities,
    Enumerating,
    LazyFetching,
)
from headwater.errors import ConfigError, TransientError
from headwater.types import Checkpoint, Deleted, Failure, SourceDocument, SourceItem, Window

FAR_FUTURE = datetime(2100, 1, 1, tzinfo=UTC)


def no_known(object_id: str) -> str | None:
    """A ``KnownVersions`` for an empty manifest."""
    return None


@dataclass
class ReadResult:
    """Everything one ``read`` produced, in order."""

    items: list[SourceItem]
    final: Checkpoint | None

    @property
    def documents(self) -> list[SourceDocument]:
        """The documents among the items read."""
        return [i for i in self.items if isinstance(i, SourceDocument)]

    @property
    def object_ids(self) -> list[str]:
        """The object ids of the documents, failures and deletes read, in order."""
        return [
            i.object_id for i in self.items if isinstance(i, SourceDocument | Failure | Deleted)
        ]


def collect(stream: Iterator[SourceItem] | Any) -> ReadResult:
    """Drain a connector's read generator, keeping its return value."""
    items: list[SourceItem] = []
    while True:
        try:
            items.append(next(stream))
        except StopIteration as stop:
            return ReadResult(items=items, final=stop.value)


def full_read(harness: ConnectorHarness) -> ReadResult:
    """Everything a fresh connector of ``harness`` yields over an unbounded window."""
    return collect(harness.make().read(Window(None, FAR_FUTURE), None, no_known))


@dataclass
class ConnectorHarness:
    """How the suite builds the connector under test.

    ``make`` builds a working connector over a source with at least ``min_documents``
    documents. ``make_broken`` builds one whose ``validate()`` must fail (bad path,
    refused connection, wrong credentials). ``make_failing_listing`` builds one over the
    same objects whose listing fails part way through (an unreadable folder, a page or
    sitemap the server refuses, a row that errors); required.
    """

    make: Callable[[], Connector]
    make_broken: Callable[[], Connector]
    make_failing_listing: Callable[[], Connector] | None = None
    min_documents: int = 3


class ConnectorConformance:
    """Subclass in a test module, name the connector class, provide a ``harness`` fixture.

    ``class TestX(ConnectorConformance, connector=MyConnector)``: the checks a connector's
    declared capabilities call for are defined on the subclass (``_checks_for``), the
    others are not, so a check that does not apply is never run (nor passes silently).
    A class pytest collects (``Test…``) must name its connector, itself or by a parent;
    where capabilities follow the options (sql), it passes them too (``capabilities=``),
    and ``test_declared_capabilities_are_the_connectors`` holds it to them.
    """

    connector_class: ClassVar[type[Connector] | None] = None
    declared_capabilities: ClassVar[ConnectorCapabilities | None] = None

    def __init_subclass__(
        cls,
        connector: type[Connector] | None = None,
        capabilities: ConnectorCapabilities | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if connector is not None:
            cls.connector_class = connector
            cls.declared_capabilities = capabilities or connector.capabilities
            for name, check in _checks_for(connector, cls.declared_capabilities).items():
                setattr(cls, name, check)
        elif cls.connector_class is None and cls.__name__.startswith("Test"):
            raise TypeError(
                f"{cls.__name__}: name the connector under test, e.g. "
                f"`class {cls.__name__}(ConnectorConformance, connector=MyConnector)`, so "
                "the suite runs the checks its capabilities call for"
            )

    @pytest.fixture
    def harness(self) -> ConnectorHarness:  # pragma: no cover - overridden
        """The connector under test: each conformance class overrides this fixture."""
        raise RuntimeError("override the `harness` fixture in your conformance test class")

    def _full(self, harness: ConnectorHarness) -> ReadResult:
        return full_read(harness)

    def test_declared_capabilities_are_the_connectors(self, harness: ConnectorHarness) -> None:
        """The capabilities the checks were chosen by are the connector's own."""
        assert harness.make().capabilities == self.declared_capabilities

    def test_full_read_yields_documents(self, harness: ConnectorHarness) -> None:
        """A full read yields at least the harness's minimum of documents."""
        result = self._full(harness)
        docs = result.documents
        assert len(docs) >= harness.min_documents
        ids = [d.object_id for d in docs]
        assert len(ids) == len(set(ids)), "an object id was yielded twice in one read"
        for doc in docs:
            assert doc.object_id and doc.locator and doc.version
            assert doc.content is not None or doc.fetch_ref is not None, (
                f"{doc.object_id}: a first read must carry content or a fetch_ref"
            )

    def test_stable_order(self, harness: ConnectorHarness) -> None:
        """Two full reads yield the same object ids in the same order."""
        assert self._full(harness).object_ids == self._full(harness).object_ids

    def test_resume_from_each_checkpoint(self, harness: ConnectorHarness) -> None:
        """A read resumed from any checkpoint yields what the full read yields after it."""
        full = self._full(harness)
        window = Window(None, FAR_FUTURE)
        for index, item in enumerate(full.items):
            if not isinstance(item, Checkpoint):
                continue
            after = ReadResult(items=full.items[index + 1 :], final=full.final)
            resumed = collect(harness.make().read(window, item, no_known))
            assert resumed.object_ids == after.object_ids, (
                f"resuming from {item.cursor!r} did not continue where the read left off"
            )

    def test_known_versions_are_respected(self, harness: ConnectorHarness) -> None:
        """With every version known, a connector may omit content but must still list ids."""
        full = self._full(harness)
        versions = {d.object_id: d.version for d in full.documents}
        again = collect(
            harness.make().read(Window(None, FAR_FUTURE), None, lambda o: versions.get(o))
        )
        again_ids = {d.object_id for d in again.documents}
        assert again_ids == set(versions), "a known object vanished from the listing"
        for doc in again.documents:
            if doc.content is None and doc.fetch_ref is None:
                assert doc.version == versions[doc.object_id]

    def test_a_listing_failing_part_way_deletes_nothing(self, harness: ConnectorHarness) -> None:
        """With every object known, a listing that breaks must raise or leave every known
        object present (listed, failed, or under a prefix failure), never delete one."""
        assert harness.make_failing_listing is not None, (
            "give ConnectorHarness a make_failing_listing: a connector over the same "
            "objects whose listing fails part way"
        )
        full = self._full(harness)
        versions = {d.object_id: d.version for d in full.documents}
        connector = harness.make_failing_listing()
        stream = connector.read(Window(None, FAR_FUTURE), None, lambda o: versions.get(o))
        items: list[SourceItem] = []
        raised: Exception | None = None
        try:
            items.extend(stream)
        except Exception as exc:  # a listing that cannot finish may raise: nothing deleted
            raised = exc
        deleted = [i.object_id for i in items if isinstance(i, Deleted)]
        assert not deleted, f"a broken listing yielded deletes: {deleted}"
        failures = [i for i in items if isinstance(i, Failure)]
        assert raised is not None or failures, "the listing failure was silent"
        if raised is None and connector.capabilities.full_listing:
            listed = {i.object_id for i in items if isinstance(i, SourceDocument)}
            missing = [
                o for o in versions if o not in listed and not any(f.covers(o) for f in failures)
            ]
            assert not missing, f"a complete-looking read would delete {missing}"
        if isinstance(connector, Enumerating):
            try:
                enumerated = set(connector.enumerate())
            except Exception:
                return  # raising is how a partial enumeration deletes nothing
            assert set(versions) <= enumerated, "a partial enumerate() returned normally"

    def test_validate_ok_and_broken_is_readable(self, harness: ConnectorHarness) -> None:
        """``validate`` passes on a good config and names the problem of a broken one."""
        harness.make().validate()
        broken = harness.make_broken()
        with pytest.raises((ConfigError, TransientError)) as caught:
            broken.validate()
        message = str(caught.value)
        assert len(message) > 20 and "\n" not in message.strip(), message
        assert "Traceback" not in message


class _CapabilityChecks:
    """Checks defined on a conformance class only when its connector declares (or lacks)
    a capability: ``_checks_for`` picks them; never inherited by the suite itself."""

    def _full(self, harness: ConnectorHarness) -> ReadResult:
        return full_read(harness)

    def test_window_has_open_lower_bound(self, harness: ConnectorHarness) -> None:
        """``windowed``: a read over ``(start, end]`` yields exactly what changed in it."""
        docs = self._full(harness).documents
        times = sorted({d.updated_at for d in docs if d.updated_at is not None})
        assert len(times) >= 2, "a windowed connector's test source needs two update times"
        start, end = times[0], times[-1]
        expected = {
            d.object_id for d in docs if d.updated_at is not None and start < d.updated_at <= end
        }
        # The window filters objects the manifest holds; a connector may still yield an
        # object it was never given (an rss entry first seen with an old date).
        versions = {d.object_id: d.version for d in docs}
        got = collect(harness.make().read(Window(start, end), None, lambda o: versions.get(o)))
        assert {d.object_id for d in got.documents} == expected

    def test_an_unwindowed_connector_ignores_the_window(self, harness: ConnectorHarness) -> None:
        """Not ``windowed``: a narrow window reads exactly what a full read does."""
        narrow = Window(FAR_FUTURE - timedelta(days=1), FAR_FUTURE)
        windowed = collect(harness.make().read(narrow, None, no_known)).object_ids
        assert windowed == self._full(harness).object_ids

    def test_enumerate_equals_full_read(self, harness: ConnectorHarness) -> None:
        """``Enumerating``: ``enumerate()`` lists exactly the ids a full read yields."""
        read_ids = set(self._full(harness).object_ids)  # first: a read fills link caches
        connector = harness.make()
        assert isinstance(connector, Enumerating)
        assert set(connector.enumerate()) == read_ids

    def test_lazy_fetch(self, harness: ConnectorHarness) -> None:
        """``LazyFetching``: every document read with a ``fetch_ref`` fetches to bytes."""
        connector = harness.make()
        assert isinstance(connector, LazyFetching)
        docs = collect(connector.read(Window(None, FAR_FUTURE), None, no_known)).documents
        for doc in docs:
            if doc.content is None and doc.fetch_ref is not None:
                assert len(connector.fetch(doc.fetch_ref)) > 0, doc.object_id

    def test_no_fetch_ref_without_fetch(self, harness: ConnectorHarness) -> None:
        """Not ``LazyFetching``: every document read carries its content."""
        docs = self._full(harness).documents
        lazy = [d.object_id for d in docs if d.content is None and d.fetch_ref is not None]
        assert not lazy, f"fetch_ref given but the connector has no fetch(): {lazy}"


def _checks_for(
    connector: type[Connector], capabilities: ConnectorCapabilities
) -> dict[str, Callable[..., None]]:
    """The capability checks that apply to ``connector`` with ``capabilities``, by name."""
    names = [
        "test_window_has_open_lower_bound"
        if capabilities.windowed
        else "test_an_unwindowed_connector_ignores_the_window",
        "test_lazy_fetch"
        if issubclass(connector, LazyFetching)
        else "test_no_fetch_ref_without_fetch",
    ]
    if issubclass(connector, Enumerating):
        names.append("test_enumerate_equals_full_read")
    return {name: vars(_CapabilityChecks)[name] for name in names}
