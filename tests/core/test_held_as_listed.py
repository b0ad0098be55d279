"""Gate 1 for a batch at once (``sync.held``) skips exactly what the gates would skip.

Before the gates, a batch's plain documents are compared with a few columns of their rows
(version hint, locator, metadata as stored, state, pipeline version, ACL, title); those
held as listed are counted unchanged without their full rows or the gates. The gates stay
the judge: on the same rows (both databases) every document the check skips is one the
gates leave unchanged without writing anything, and every plain document the gates leave
so is skipped (else the check would be slower, not wrong). Each way a document can differ
from its row is one case below; a random part mixes them over awkward ids and more than
one query's worth of ids. The runner uses it: a no-op reads no full row of an unchanged
file, and an edit reads exactly the edited file's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from headwater.manifest.content import FolderContentStore
from headwater.manifest.prunes import CHUNK
from headwater.manifest.records import BatchCommit, DocumentWrite, FailureWrite, RunCounts
from headwater.manifest.store import Manifest
from headwater.sync.decisions import SourceIdentity, signature_of
from headwater.sync.gates import BatchBuilder, Outcome
from headwater.sync.held import HeldAsListed
from headwater.sync.known import ManifestVersions
from headwater.sync.rules import RuleSet
from headwater.types import Access, MetadataValue, SourceDocument
from headwater.workspace import Workspace
from workspace_helpers import filesystem_source, write_config

SOURCE = SourceIdentity("t", "filesystem", "s", Access(public=True), "pv")
NOW = datetime(2026, 12, 1, tzinfo=UTC)
RULES = RuleSet.from_tables([{"exclude": {"size_over": 1000}}])
CHECKSUM = "c" * 64


@dataclass(frozen=True)
class Case:
    """A row as stored (None: no row), the document listed, and whether it is held."""

    row: DocumentWrite | None
    doc: SourceDocument
    held: bool
    dead_at: str | None = None  # a dead fetch failure at this source version


def _row(object_id: str, **changes: object) -> DocumentWrite:
    metadata: dict[str, MetadataValue] = {"path": object_id, "hierarchy": object_id}
    values: dict[str, object] = {
        "document_id": f"doc-{object_id}",
        "source_id": "s",
        "object_id": object_id,
        "locator": f"/r/{object_id}",
        "title": "T",
        "media_type": None,
        "source_version": "v1",
        "checksum": CHECKSUM,
        "signature": "",
        "pipeline_version": "pv",
        "revision": 1,
        "sequence": None,
        "state": "active",
        "acl": ("public",),
        "metadata": metadata,
        "last_seen_run": None,
        "is_new": True,
    }
    values.update(changes)
    row = DocumentWrite(**values)  # type: ignore[arg-type]
    signed = signature_of(CHECKSUM, row.title, row.locator, row.metadata)
    return replace(row, signature=signed)  # as the gates sign it: the hash agrees


def _doc(row: DocumentWrite, **changes: object) -> SourceDocument:
    values: dict[str, object] = {
        "object_id": row.object_id,
        "locator": row.locator,
        "title": "",
        "version": row.source_version,
        "metadata": dict(row.metadata),
        "size": 10,
    }
    values.update(changes)
    return SourceDocument(**values)  # type: ignore[arg-type]


def _case(name: str, held: bool, row: dict[str, object], doc: dict[str, object]) -> Case:
    written = _row(name, **row)
    return Case(written, _doc(written, **doc), held)


CASES = [
    _case("same", True, {}, {}),
    _case("title given, the row's", True, {}, {"title": "T"}),
    _case("title given, another", False, {}, {"title": "U"}),
    _case("version", False, {}, {"version": "v2"}),
    _case("locator", False, {}, {"locator": "/r/moved"}),
    _case("metadata value", False, {}, {"metadata": {"path": "x", "hierarchy": "title given"}}),
    _case("metadata key", False, {}, {"metadata": {"path": "metadata key"}}),
    _case("metadata list", True, {"metadata": {"k": ["a", "é"]}}, {"metadata": {"k": ["a", "é"]}}),
    _case("metadata number", False, {"metadata": {"n": 1}}, {"metadata": {"n": 1}}),
    _case("non-ASCII é \"q\" \\ \t", True, {"title": "日本"}, {}),
    _case("deleted", False, {"state": "deleted"}, {}),
    _case("pipeline", False, {"pipeline_version": "old"}, {}),
    _case("row acl", False, {"acl": ("group:staff",)}, {}),
    _case("listed acl, the row's", True, {"acl": ("group:staff",)}, {"access": Access(groups=("staff",))}),
    _case("listed acl, another", False, {}, {"access": Access(groups=("staff",))}),
    _case("listed acl, refused", False, {}, {"access": Access(users=("ＡＤＭＩＮ@x",))}),
    _case("sequence", False, {"sequence": 5}, {"sequence": 3}),  # stale
    _case("unavailable", False, {"metadata": {"content": "unavailable"}}, {"metadata": {"content": "unavailable"}}),
    _case("ruled out", False, {}, {"size": 5000}),
    _case("no hint", True, {"source_version": None}, {}),
    Case(None, SourceDocument(object_id="new", locator="/r/new", title="", version="v1"), False),
    replace(_case("dead here", False, {}, {}), dead_at="v1"),
    replace(_case("dead before", False, {}, {}), dead_at="v0"),
]  # fmt: skip


def _store(manifest: Manifest, cases: list[Case]) -> None:
    manifest.ensure_source("s", "filesystem")
    writes = [c.row for c in cases if c.row is not None]
    dead = [
        FailureWrite("s", c.row.object_id, c.row.document_id, c.row.locator, "fetch", "corrupt",
                     "m", "pv", c.dead_at, None, permanent=True)
        for c in cases if c.row is not None and c.dead_at is not None
    ]  # fmt: skip
    manifest.commit_batch("run0", BatchCommit(writes=writes, failures=dead))


def _gates_quiet(manifest: Manifest, docs: list[SourceDocument], tmp_path: Path) -> set[str]:
    """The documents the gates leave unchanged without writing anything, each decided alone
    from its row as the runner reads it."""
    ids = [d.object_id for d in docs]
    existing = manifest.fields_by_object_ids("s", ids)
    dead = manifest.failures.dead_source_versions([SOURCE.document_id(o) for o in ids])
    dead |= {r.document_id: v for r in existing.values() if (v := dead.get(r.document_id))}
    quiet = set()
    for doc in docs:
        builder = BatchBuilder(
            source=SOURCE,
            run_id="run1",
            existing=existing,
            tombstone_sequences={},
            dead_versions=dead,
            content_store=FolderContentStore(tmp_path / "content"),
            fetch=None,
            counts=RunCounts(),
        )
        excluded = RULES.excludes(doc, NOW)
        outcome = None if excluded else builder.add_document(doc)
        commit = builder.commit
        if outcome == Outcome.UNCHANGED and not (commit.writes or commit.failures):
            assert commit.seen_objects == [doc.object_id]
            quiet.add(doc.object_id)
    return quiet


def test_each_way_a_document_differs_is_left_to_the_gates(
    manifest_url: str, tmp_path: Path
) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        _store(manifest, CASES)
        docs = [c.doc for c in CASES]
        held, rest = HeldAsListed(manifest, SOURCE, RULES, NOW).split(list(docs), None)
        assert sorted(held) == sorted(c.doc.object_id for c in CASES if c.held)
        assert held and set(held) <= _gates_quiet(manifest, docs, tmp_path)
        assert rest == [d for d in docs if d.object_id not in held]  # in the listed order
    finally:
        manifest.close()


ALPHABET = ["a", "é", '"', "\\", "\t", "/", "日", " ", "%", "_"]


def test_a_random_batch_skips_exactly_what_the_gates_leave_unchanged(
    manifest_url: str, tmp_path: Path
) -> None:
    """Random rows and listings, each differing from its row in zero to two ways, over
    more ids than one query reads: the check and the gates agree on every document
    that the check may decide (no sequence, string metadata, no dead failure)."""
    rng = random.Random(29)
    changes = [
        ("version", lambda r: {"version": "v9"}),
        ("title", lambda r: {"title": rng.choice(["T", "U"])}),
        ("locator", lambda r: {"locator": r.locator + "x"}),
        ("metadata", lambda r: {"metadata": {**r.metadata, "path": "other"}}),
        ("acl", lambda r: {"access": Access(groups=("staff",))}),
        ("size", lambda r: {"size": 2000}),
    ]
    cases = []
    for n in range(CHUNK + 140):
        object_id = "".join(rng.choice(ALPHABET) for _ in range(6)) + f"{n}"
        row = _row(
            object_id,
            title=rng.choice(["T", "日本", ""]),
            state=rng.choice(["active"] * 9 + ["deleted"]),
        )
        doc_changes: dict[str, object] = {}
        for _, change in rng.sample(changes, rng.choice([0, 0, 0, 1, 2])):
            doc_changes.update(change(row))
        cases.append(Case(row, _doc(row, **doc_changes), held=False))
    manifest = Manifest.open(manifest_url)
    try:
        _store(manifest, cases)
        docs = [c.doc for c in cases]
        rng.shuffle(docs)
        held, _ = HeldAsListed(manifest, SOURCE, RULES, NOW).split(list(docs), None)
        quiet = _gates_quiet(manifest, docs, tmp_path)
        assert set(held) == quiet
        # the same from the rows a connector's version questions read and kept
        known = ManifestVersions(manifest, "s", "pv", full=False)
        asked = [d.object_id for d in docs[:300]]
        known.many(asked)
        kept, _ = HeldAsListed(manifest, SOURCE, RULES, NOW).split(list(docs), known)
        assert kept == held and known.take(asked)[0] == {}  # each kept row given once
        assert 0.4 < len(quiet) / len(docs) < 0.8  # the mix holds both kinds
    finally:
        manifest.close()


def test_a_no_op_reads_no_full_row_of_an_unchanged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner asks the gates' full rows only of what is not held as listed."""
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(300):
        (root / f"f{n:03d}.md").write_text(f"# note {n}\n\nbody {n}\n", encoding="utf-8")
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(root))
    read: list[str] = []
    real = Manifest.fields_by_object_ids

    def counted(self: Manifest, source_id: str, object_ids: list[str]) -> dict[str, object]:
        read.extend(object_ids)
        return real(self, source_id, object_ids)  # type: ignore[return-value]

    with Workspace.open(config) as ws:
        first = ws.sync(index=False).runs[0].counts
        assert first.new == 300
        monkeypatch.setattr(Manifest, "fields_by_object_ids", counted)
        again = ws.sync(index=False).runs[0].counts
        assert (again.seen, again.unchanged, again.changed) == (300, 300, 0)
        assert read == []
        (root / "f007.md").write_text("# note 7\n\nedited\n", encoding="utf-8")
        (root / "f008.md").unlink()
        edited = ws.sync(index=False).runs[0].counts
        assert (edited.unchanged, edited.changed, edited.deleted) == (298, 1, 1)
        assert read == ["f007.md"]
        full = ws.sync(index=False, full=True).runs[0].counts  # --full reads every row
        assert full.unchanged == 299 and len(read) == 1 + 299
