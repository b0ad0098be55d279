"""The shipped sink conformance suite.

A sink's test module subclasses ``SinkConformance`` and provides the ``sink`` fixture (a
fresh, opened sink of dimension ``DIMENSION``), ``fail_midway`` (fault injection: a
context manager in which the sink's storage fails half-way through writing a replace's
new chunks) and, for a sink that persists, ``reopen`` (a callable opening the same
storage again); it names the sink class, and every contract check that applies then
runs for it (the keyword check only for a ``keyword`` sink, persistence only with
``reopen``; the others are not defined on the class, so they never run):

    class TestMySinkConformance(SinkConformance, sink=MySink):
        @pytest.fixture
        def sink(self, tmp_path):
            sink = MySink(MySink.Options(), sink_context(tmp_path))
            yield sink
            sink.close()

        @pytest.fixture
        def fail_midway(self):
            return lambda sink: my_storage_fails_after_half_the_chunks(sink)

Checks: idempotent replace, exact swaps, deletes to zero, ACL updates without
re-embedding, ABSENT for a document the sink does not hold, no invisible hit and no
starvation by the ACL filter (per search mode), stale writes refused, no resurrection,
a replace failing midway leaves the old revision whole and alone, forgotten tombstones,
manifest binding, inventory in document_id order, the sources filter, persistence,
generations (separate storage per generation, chunk texts, drop), folder scopes
(``_suite_scopes``: boundary-safe, inside the index, kept by ACL updates) and the
permission-change matrix (``_suite_permissions``: public → private, user removed, group
removed, member removed from a group, group deleted, unreadable ACL; each by ACL-only
update and by full replace, checked by a search as the affected user).
Vectors are deterministic and unit-length. Requires pytest (a dev dependency).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from headwater.sinks._suite_base import (
    ACCESS_POOL,
    CALLERS,
    DIMENSION,
    EVERYONE,
    SuiteBase,
    ask,
    make_chunks,
    make_document,
    near,
    sink_context,
    unit_vector,
)
from headwater.sinks._suite_generations import GenerationChecks
from headwater.sinks._suite_lifecycle import LifecycleChecks
from headwater.sinks._suite_permissions import MATRIX, PermissionChange, PermissionMatrixChecks
from headwater.sinks._suite_scopes import ScopeChecks
from headwater.sinks.base import Sink, WriteOutcome
from headwater.types import Access, IndexDocument, SearchMode, caller_principals

__all__ = [
    "DIMENSION",
    "EVERYONE",
    "MATRIX",
    "PermissionChange",
    "SinkConformance",
    "SuiteBase",
    "ask",
    "make_chunks",
    "make_document",
    "near",
    "sink_context",
    "unit_vector",
]


class SinkConformance(LifecycleChecks, GenerationChecks, ScopeChecks, PermissionMatrixChecks):
    """Subclass in a test module, name the sink class, provide ``sink`` and ``fail_midway``
    (and ``reopen`` if the sink persists).

    ``class TestX(SinkConformance, sink=MySink)``: the checks the sink's declared
    capabilities call for are defined on the subclass, the others are not, so a check
    that does not apply is never run (nor passes silently): the keyword check for a sink
    with ``keyword`` search, the persistence check for a class that defines ``reopen``.
    A class pytest collects (``Test…``) must name its sink, itself or by a parent.
    """

    sink_class: ClassVar[type[Sink] | None] = None

    def __init_subclass__(cls, sink: type[Sink] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if sink is not None:
            cls.sink_class = sink
        if cls.sink_class is not None:
            for name, check in _checks_for(cls.sink_class, _defines_reopen(cls)).items():
                setattr(cls, name, check)
        elif cls.__name__.startswith("Test"):
            raise TypeError(
                f"{cls.__name__}: name the sink under test, e.g. "
                f"`class {cls.__name__}(SinkConformance, sink=MySink)`, so the suite runs "
                "the checks its capabilities call for"
            )

    # ---- writes -------------------------------------------------------------------

    def test_replace_is_idempotent(self, sink: Sink) -> None:
        """Replacing with the same chunks twice leaves one copy of each."""
        doc = make_document("idem", Access(public=True))
        chunks = make_chunks(doc, ["idem river one", "idem river two", "idem river three"])
        assert sink.replace(doc, chunks, 1) is WriteOutcome.APPLIED
        before = {m: self.find(sink, m, "idem river two", ["public"]) for m in self.modes(sink)}
        assert sink.replace(doc, chunks, 1) is WriteOutcome.APPLIED
        assert sink.count(doc.document_id) == 3
        assert sink.revision(doc.document_id) == 1
        for mode, hits in before.items():
            again = self.find(sink, mode, "idem river two", ["public"])
            assert self.ids_of(again) == self.ids_of(hits), mode
            assert [h.score for h in again] == pytest.approx([h.score for h in hits]), mode

    def test_replace_with_fewer_chunks_leaves_no_extra(self, sink: Sink) -> None:
        """A replace with fewer chunks leaves none of the old extra ones."""
        doc = make_document("shrink", Access(public=True))
        sink.replace(doc, make_chunks(doc, [f"shrink part {i}" for i in range(5)]), 1)
        smaller = make_chunks(doc, ["shrink new zero", "shrink new one"])
        assert sink.replace(doc, smaller, 2) is WriteOutcome.APPLIED
        assert sink.count(doc.document_id) == 2
        assert sink.revision(doc.document_id) == 2
        for mode in self.modes(sink):
            hits = self.find(sink, mode, "shrink part 3", EVERYONE)
            assert {h.chunk_id for h in hits} <= {c.chunk.chunk_id for c in smaller}, mode
            assert {h.text for h in hits} <= {"shrink new zero", "shrink new one"}, mode
        # A new pipeline version renames every chunk: none of the old ones may survive.
        renamed = make_chunks(doc, ["shrink final"], pipeline="p2")
        sink.replace(doc, renamed, 3)
        assert sink.count(doc.document_id) == 1
        for mode in self.modes(sink):
            hits = self.find(sink, mode, "shrink new zero", EVERYONE)
            assert self.ids_of(hits) == [renamed[0].chunk.chunk_id], mode

    def test_delete_leaves_zero(self, sink: Sink) -> None:
        """A delete leaves no chunk of the document."""
        doc = make_document("gone", Access(public=True))
        sink.replace(doc, make_chunks(doc, ["gone alpha", "gone beta"]), 1)
        assert sink.delete(doc.document_id, 2) is WriteOutcome.APPLIED
        assert sink.count(doc.document_id) == 0
        assert sink.revision(doc.document_id) is None
        for mode in self.modes(sink):
            assert self.find(sink, mode, "gone alpha", EVERYONE) == [], mode
        assert doc.document_id not in {row.document_id for row in sink.inventory()}
        assert sink.delete(doc.document_id, 2) is WriteOutcome.APPLIED  # replayed delete

    def test_update_access_changes_visibility_not_vectors(self, sink: Sink) -> None:
        """``update_access`` changes who finds the chunks, not the chunks."""
        doc = make_document("acl", Access(users=("x@example.com",), groups=("a",)))
        sink.replace(doc, make_chunks(doc, ["acl harbour one", "acl harbour two"]), 1)
        x = caller_principals("x@example.com")
        in_a = caller_principals(None, ["a"])
        in_b = caller_principals(None, ["b"])
        vector_before = self._vector_scores(sink, "acl harbour one", x)
        assert self.find(sink, self.modes(sink)[0], "acl harbour one", in_a)
        new_access = Access(users=("x@example.com",), groups=("b",))
        assert sink.update_access(doc.document_id, new_access, 2) is WriteOutcome.APPLIED
        assert sink.revision(doc.document_id) == 2
        assert sink.count(doc.document_id) == 2
        for mode in self.modes(sink):
            assert self.find(sink, mode, "acl harbour one", in_a) == [], mode
            assert len(self.find(sink, mode, "acl harbour one", in_b)) == 2, mode
        assert self._vector_scores(sink, "acl harbour one", x) == vector_before

    def _vector_scores(
        self, sink: Sink, text: str, principals: Sequence[str]
    ) -> list[tuple[str, float]]:
        if not sink.capabilities.vector:
            return []
        hits = self.find(sink, SearchMode.VECTOR, text, principals)
        return [(h.chunk_id, round(h.score, 6)) for h in hits]

    def test_stale_writes_change_nothing(self, sink: Sink) -> None:
        """Writes at a revision older than the held one change nothing."""
        doc = make_document("stale", Access(groups=("a",)))
        current = make_chunks(doc, ["stale current one", "stale current two"])
        sink.replace(doc, current, 5)
        older = make_chunks(doc, ["stale older"])
        assert sink.replace(doc, older, 4) is WriteOutcome.STALE
        assert sink.update_access(doc.document_id, Access(public=True), 4) is WriteOutcome.STALE
        assert sink.delete(doc.document_id, 4) is WriteOutcome.STALE
        assert sink.revision(doc.document_id) == 5
        assert sink.count(doc.document_id) == 2
        for mode in self.modes(sink):
            assert self.find(sink, mode, "stale current one", ["public"]) == [], mode
            hits = self.find(sink, mode, "stale current one", ["public", "group:a"])
            assert {h.chunk_id for h in hits} == {c.chunk.chunk_id for c in current}, mode

    def test_no_resurrection_after_delete(self, sink: Sink) -> None:
        """A replace older than the delete's revision does not bring the document back."""
        doc = make_document("zombie", Access(public=True))
        chunks = make_chunks(doc, ["zombie text"])
        sink.replace(doc, chunks, 1)
        sink.delete(doc.document_id, 3)
        assert sink.replace(doc, chunks, 2) is WriteOutcome.STALE
        assert sink.replace(doc, chunks, 3) is WriteOutcome.STALE
        assert sink.update_access(doc.document_id, Access(public=True), 3) is WriteOutcome.STALE
        assert sink.count(doc.document_id) == 0 and sink.revision(doc.document_id) is None
        assert sink.replace(doc, chunks, 4) is WriteOutcome.APPLIED
        assert sink.count(doc.document_id) == 1 and sink.revision(doc.document_id) == 4
        # A tombstone for a document the sink never held blocks older replaces too.
        never = make_document("never", Access(public=True))
        assert sink.delete(never.document_id, 7) is WriteOutcome.APPLIED
        assert sink.replace(never, make_chunks(never, ["never"]), 6) is WriteOutcome.STALE
        assert sink.count(never.document_id) == 0

    # ---- search -------------------------------------------------------------------

    def _mixed_corpus(self, sink: Sink) -> dict[str, IndexDocument]:
        """30 documents of 2 chunks with ACLs cycling through ``ACCESS_POOL``."""
        by_chunk: dict[str, IndexDocument] = {}
        for i in range(30):
            doc = make_document(f"mixed{i}", ACCESS_POOL[i % len(ACCESS_POOL)])
            chunks = make_chunks(doc, [f"mixed lantern {i} first", f"mixed lantern {i} second"])
            assert sink.replace(doc, chunks, 1) is WriteOutcome.APPLIED
            by_chunk.update({c.chunk.chunk_id: doc for c in chunks})
        return by_chunk

    def test_search_never_returns_an_invisible_chunk(self, sink: Sink) -> None:
        """No caller ever finds a chunk its principals may not read, in any mode."""
        by_chunk = self._mixed_corpus(sink)
        for caller in CALLERS:
            visible = {
                cid for cid, doc in by_chunk.items() if set(doc.access.principals()) & set(caller)
            }
            for mode in self.modes(sink):
                hits = self.find(sink, mode, "mixed lantern 7 first", caller, k=100)
                for hit in hits:
                    allowed = by_chunk[hit.chunk_id].access.principals()
                    assert set(allowed) & set(caller), f"{mode}: {caller} saw {allowed}"
                if mode is not SearchMode.HYBRID:
                    assert {h.chunk_id for h in hits} == visible, f"{mode}: {caller} missed hits"

    def test_nobody_sees_a_document_without_acl(self, sink: Sink) -> None:
        """A document with an empty ACL is stored but found by nobody."""
        doc = make_document("secret", Access.nobody())
        sink.replace(doc, make_chunks(doc, ["secret vault"]), 1)
        assert sink.count(doc.document_id) == 1
        for mode in self.modes(sink):
            assert self.find(sink, mode, "secret vault", EVERYONE) == [], mode

    def test_filtering_does_not_starve_results(self, sink: Sink) -> None:
        """The ACL filter still returns ``k`` hits when most near chunks are hidden."""
        query = unit_vector("starve query")
        hidden = Access(groups=("hidden",))
        for i in range(40):
            doc = make_document(f"near{i}", hidden)
            vectors = [near(query, f"near{i}", 0.05)]
            sink.replace(doc, make_chunks(doc, ["quartz quartz quartz quartz"], vectors), 1)
        for i in range(8):
            doc = make_document(f"far{i}", Access(groups=("seen",)))
            text = f"quartz filler{i} words{i} padding{i} more{i} text{i}"
            sink.replace(doc, make_chunks(doc, [text], [unit_vector(f"far{i}")]), 1)
        caller = caller_principals(None, ["seen"])
        for mode in self.modes(sink):
            vector = None if mode is SearchMode.KEYWORD else query
            hits = sink.search(ask(mode, text="quartz", vector=vector, principals=caller, k=5))
            assert len(hits) == 5, f"{mode}: the ACL filter starved the results"
            assert all(h.title.startswith("Title of far") for h in hits), mode

    def test_sources_filter(self, sink: Sink) -> None:
        """A search limited to sources finds only their documents."""
        for source in ("wiki", "drive", "mail"):
            doc = make_document("same-name", Access(public=True), source=source)
            sink.replace(doc, make_chunks(doc, [f"sources meadow {source}"]), 1)
        for mode in self.modes(sink):
            vector = None if mode is SearchMode.KEYWORD else unit_vector("sources meadow wiki")
            for sources, expected in (
                (["wiki"], {"wiki"}),
                (["wiki", "mail"], {"wiki", "mail"}),
                ([], set()),
                (None, {"wiki", "drive", "mail"}),
            ):
                req = ask(mode, text="sources meadow", vector=vector, k=10, sources=sources)
                assert {h.source for h in sink.search(req)} == expected, (mode, sources)

    def test_scores_rank_best_first(self, sink: Sink) -> None:
        """Hits come best first, scores never rising, with the document's locator and title."""
        doc = make_document("rank", Access(public=True))
        sink.replace(doc, make_chunks(doc, ["rank cedar", "rank birch", "rank maple"]), 1)
        for mode in self.modes(sink):
            hits = self.find(sink, mode, "rank birch", ["public"], k=3)
            assert hits and hits[0].text == "rank birch", mode
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            assert hits[0].locator == doc.locator and hits[0].title == doc.title
            assert hits[0].document_id == doc.document_id and hits[0].ordinal == 1

    def test_k_limits_results(self, sink: Sink) -> None:
        """A search returns at most ``k`` hits."""
        self._mixed_corpus(sink)
        for mode in self.modes(sink):
            assert len(self.find(sink, mode, "mixed lantern", EVERYONE, k=3)) == 3, mode
            assert self.find(sink, mode, "mixed lantern", EVERYONE, k=0) == [], mode

    # ---- inventory and persistence ------------------------------------------------

    def test_inventory_lists_exactly_live_documents(self, sink: Sink) -> None:
        """The inventory lists exactly the live documents with their chunk counts."""
        docs = [make_document(f"inv{i}", Access(public=True)) for i in range(4)]
        for i, doc in enumerate(docs):
            sink.replace(doc, make_chunks(doc, [f"inv {i} {j}" for j in range(i + 1)]), 10 + i)
        sink.delete(docs[0].document_id, 20)
        sink.delete(make_document("inv-never", Access()).document_id, 1)
        listed = list(sink.inventory())
        rows = {r.document_id: (r.revision, r.chunks) for r in listed}
        assert rows == {docs[i].document_id: (10 + i, i + 1) for i in range(1, 4)}
        assert [r.document_id for r in listed] == sorted(rows), "not in document_id order"


class _CapabilityChecks(SuiteBase):
    """Checks defined on a conformance class only when its sink declares a capability
    (``_checks_for`` picks them); never inherited by the suite itself."""

    def test_keyword_text_is_never_syntax(self, sink: Sink) -> None:
        """``keyword``: no query text is read as query syntax, nor refused as such."""
        doc = make_document("syntax", Access(public=True))
        sink.replace(doc, make_chunks(doc, ["foo bar baz and near stuff"]), 1)
        for text in ['foo-bar "x', "AND", "foo OR", "NEAR(foo", "*", '"', "", "bar*", "a:b ^c"]:
            sink.search(ask(SearchMode.KEYWORD, text=text, principals=["public"]))
        hits = sink.search(ask(SearchMode.KEYWORD, text='foo-bar "x', principals=["public"]))
        assert [h.document_id for h in hits] == [doc.document_id]

    def test_data_persists_after_reopen(self, sink: Sink, reopen: Callable[[], Sink]) -> None:
        """A sink with a ``reopen`` fixture: what was written outlives ``close()``."""
        doc = make_document("kept", Access(groups=("a",)))
        sink.replace(doc, make_chunks(doc, ["kept willow", "kept aspen"]), 3)
        sink.delete(make_document("dropped", Access()).document_id, 9)
        sink.close()
        again = reopen()
        try:
            assert again.count(doc.document_id) == 2 and again.revision(doc.document_id) == 3
            assert [(r.document_id, r.chunks) for r in again.inventory()] == [(doc.document_id, 2)]
            dropped = make_document("dropped", Access(public=True))
            assert again.replace(dropped, make_chunks(dropped, ["x"]), 8) is WriteOutcome.STALE
            for mode in self.modes(again):
                hits = self.find(again, mode, "kept aspen", ["group:a"])
                assert hits and hits[0].text == "kept aspen", mode
        finally:
            again.close()


def _defines_reopen(cls: type) -> bool:
    """Whether ``cls`` (or a parent below ``SuiteBase``) overrides the ``reopen`` fixture."""
    owner = next(klass for klass in cls.__mro__ if "reopen" in vars(klass))
    return owner is not SuiteBase


def _checks_for(sink: type[Sink], persists: bool) -> dict[str, Callable[..., None]]:
    """The capability checks that apply to ``sink`` (persisting or not), by name."""
    names = ["test_keyword_text_is_never_syntax"] if sink.capabilities.keyword else []
    if persists:
        names.append("test_data_persists_after_reopen")
    return {name: vars(_CapabilityChecks)[name] for name in names}
