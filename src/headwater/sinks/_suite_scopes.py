"""Conformance checks of folder scopes: the ``scopes`` filter of a search request.

A document's scope tokens come from its ``hierarchy`` metadata (``headwater.scopes``);
a scoped search returns only chunks holding one of the asked tokens, matched exactly
(``a`` never matches ``a-x``), filtered inside the index so ``k`` hits still come back,
and kept across an ACL-only update.
"""

from __future__ import annotations

from collections.abc import Sequence

from headwater.scopes import scope_key
from headwater.sinks._suite_base import (
    SuiteBase,
    ask,
    make_chunks,
    make_document,
    near,
    unit_vector,
)
from headwater.sinks.base import Sink, WriteOutcome
from headwater.types import Access, SearchMode, caller_principals

# (name, source, hierarchy path, access) of the scope checks' documents.
TREE = [
    ("x", "docs", "a/x.md", Access(public=True)),
    ("z", "docs", "a/b/z.md", Access(public=True)),
    ("y", "docs", "a-x/y.md", Access(public=True)),
    ("ab", "docs", "ab/v.md", Access(public=True)),
    ("w", "docs", "b/w.md", Access(public=True)),
    ("h", "docs", "a/hidden.md", Access(groups=("secret",))),
    ("q", "other", "a/q.md", Access(public=True)),
    ("flat", "flat", None, Access(public=True)),
]


class ScopeChecks(SuiteBase):
    """Folder-scoped search, per search mode the sink serves."""

    def _scoped(self, sink: Sink, mode: SearchMode, scopes: Sequence[str] | None) -> set[str]:
        vector = None if mode is SearchMode.KEYWORD else unit_vector("scope orchard x")
        request = ask(mode, text="scope orchard", vector=vector, k=50, scopes=scopes)
        return {h.title.removeprefix("Title of ") for h in sink.search(request)}

    def test_scopes_filter_is_boundary_safe(self, sink: Sink) -> None:
        """A scope finds the documents at or under its folder, in its source only, never
        a sibling whose name merely starts the same (``a`` vs ``a-x``, ``ab``)."""
        for name, source, path, access in TREE:
            doc = make_document(name, access, source=source, hierarchy=path)
            sink.replace(doc, make_chunks(doc, [f"scope orchard {name}"]), 1)
        cases: list[tuple[list[str] | None, set[str]]] = [
            ([scope_key("docs", "a")], {"x", "z"}),
            ([scope_key("docs", "a/")], {"x", "z"}),
            ([scope_key("docs", "a/b")], {"z"}),
            ([scope_key("docs", "a-x")], {"y"}),
            ([scope_key("docs", "a/x.md")], {"x"}),
            ([scope_key("docs", "a/x")], set()),
            ([scope_key("docs", "a"), scope_key("docs", "b")], {"x", "z", "w"}),
            ([scope_key("other", "a")], {"q"}),
            ([scope_key("docs", "")], {"x", "z", "y", "ab", "w"}),
            ([scope_key("flat", "")], {"flat"}),
            ([], set()),
            (None, {"x", "z", "y", "ab", "w", "q", "flat"}),
        ]
        for mode in self.modes(sink):
            for scopes, expected in cases:
                assert self._scoped(sink, mode, scopes) == expected, (mode, scopes)

    def test_scopes_and_acl_both_hold(self, sink: Sink) -> None:
        """A scoped search still filters by the ACL, and by the sources when given."""
        for name, source, path, access in TREE:
            doc = make_document(name, access, source=source, hierarchy=path)
            sink.replace(doc, make_chunks(doc, [f"scope orchard {name}"]), 1)
        secret = caller_principals(None, ["secret"])
        for mode in self.modes(sink):
            vector = None if mode is SearchMode.KEYWORD else unit_vector("scope orchard h")
            scoped = [scope_key("docs", "a")]
            found = sink.search(
                ask(mode, text="orchard", vector=vector, principals=secret, k=50, scopes=scoped)
            )
            assert {h.title for h in found} == {"Title of x", "Title of z", "Title of h"}, mode
            public = {
                h.title
                for h in sink.search(ask(mode, text="orchard", vector=vector, k=50, scopes=scoped))
            }
            assert "Title of h" not in public, mode
            other = ask(mode, text="orchard", vector=vector, k=50, scopes=scoped, sources=["other"])
            assert sink.search(other) == [], mode

    def test_scopes_do_not_starve_results(self, sink: Sink) -> None:
        """``k`` hits come back from the scope when many nearer chunks lie outside it."""
        query = unit_vector("scope starve")
        for i in range(40):
            doc = make_document(f"out{i}", Access(public=True), hierarchy=f"elsewhere/{i}.md")
            vectors = [near(query, f"out{i}", 0.05)]
            sink.replace(doc, make_chunks(doc, ["basalt basalt basalt basalt"], vectors), 1)
        for i in range(6):
            doc = make_document(f"in{i}", Access(public=True), hierarchy=f"wanted/{i}.md")
            text = f"basalt filler{i} words{i} padding{i} more{i} text{i}"
            sink.replace(doc, make_chunks(doc, [text], [unit_vector(f"in{i}")]), 1)
        for mode in self.modes(sink):
            vector = None if mode is SearchMode.KEYWORD else query
            scoped = [scope_key("docs", "wanted")]
            hits = sink.search(ask(mode, text="basalt", vector=vector, k=5, scopes=scoped))
            assert len(hits) == 5, f"{mode}: the scope filter starved the results"
            assert all(h.title.startswith("Title of in") for h in hits), mode

    def test_scopes_survive_an_acl_update(self, sink: Sink) -> None:
        """An ACL-only update keeps the chunks' scope tokens."""
        doc = make_document("moved", Access(groups=("a",)), hierarchy="team/plan.md")
        sink.replace(doc, make_chunks(doc, ["scope orchard moved"]), 1)
        assert sink.update_access(doc.document_id, Access(public=True), 2) is WriteOutcome.APPLIED
        for mode in self.modes(sink):
            assert self._scoped(sink, mode, [scope_key("docs", "team")]) == {"moved"}, mode
            assert self._scoped(sink, mode, [scope_key("docs", "other")]) == set(), mode

    def test_a_replace_moves_a_document_between_folders(self, sink: Sink) -> None:
        """A replace with another hierarchy path moves the document's scope tokens."""
        doc = make_document("moving", Access(public=True), hierarchy="old/plan.md")
        sink.replace(doc, make_chunks(doc, ["scope orchard moving"]), 1)
        moved = make_document("moving", Access(public=True), hierarchy="new/plan.md")
        sink.replace(moved, make_chunks(moved, ["scope orchard moving"]), 2)
        for mode in self.modes(sink):
            assert self._scoped(sink, mode, [scope_key("docs", "old")]) == set(), mode
            assert self._scoped(sink, mode, [scope_key("docs", "new")]) == {"moving"}, mode
