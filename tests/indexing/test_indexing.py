"""The indexer end to end with a fake embedder and two sinks (sqlite + qdrant local).

Invariants 4–7 and 12: applied revisions recorded only after a sink confirmed, new chunks
embedded before old ones go, one revision per document per sink, ACL-only changes with
zero embedder calls, and permission-filtered search in every sink.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.pipeline.embed.cache import CachedEmbedder, EmbeddingCache
from headwater.pipeline.embed.fake import FakeEmbedder
from workspace_helpers import filesystem_source, write_config


def two_sinks(tmp_path: Path) -> str:
    return (
        '[[index]]\nname = "lite"\ntype = "sqlite"\n\n'
        f'[[index]]\nname = "vectors"\ntype = "qdrant"\npath = "{tmp_path / "qdrant"}"\n'
    )


LONG_DOC = "\n\n".join(
    [f"# Handbook\n\nIntro paragraph about the handbook and its purpose number {0}."]
    + [
        f"## Section {n}\n\n"
        + " ".join(f"Sentence {n}.{m} about topic {n} in detail." for m in range(40))
        for n in range(1, 7)
    ]
)


class Counting:
    """A fake embedder behind the real cache, with counters the tests read."""

    def __init__(self, tmp_path: Path, fail_when: object = None) -> None:
        self.inner = FakeEmbedder(32, fail_when=fail_when)  # type: ignore[arg-type]
        self.cached = CachedEmbedder(self.inner, EmbeddingCache(tmp_path / "cache.db"))


def open_ws(
    tmp_path: Path, corpus: Path, counting: Counting, access: str = '{ groups = ["staff"] }'
) -> Workspace:
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, access=access),
        indexes=two_sinks(tmp_path),
    )
    return Workspace.open(config, embedder=counting.cached)


@pytest.fixture
def counting(tmp_path: Path) -> Counting:
    return Counting(tmp_path)


def test_sync_indexes_every_document_into_every_sink(
    tmp_path: Path, corpus: Path, counting: Counting
) -> None:
    with open_ws(tmp_path, corpus, counting) as ws:
        result = ws.sync()
        assert result.index.replaced == 10  # 5 documents x 2 sinks
        for name in ("lite", "vectors"):
            doc = ws.document(source="docs", object_id="guides/vacation.md")
            assert doc["indexes"][name]["applied_revision"] == 1
            assert doc["indexes"][name]["chunks"] == ws.sink(name).count(doc["document_id"]) > 0
        indexes = ws.status()["indexes"]
        assert {n: (i["type"], i["pending"]) for n, i in indexes.items()} == {
            "lite": ("sqlite", 0),
            "vectors": ("qdrant", 0),
        }


def test_no_index_leaves_work_pending_and_index_drains_it(
    tmp_path: Path, corpus: Path, counting: Counting
) -> None:
    with open_ws(tmp_path, corpus, counting) as ws:
        ws.sync(index=False)
        assert ws.status()["indexes"]["lite"]["pending"] == 5
        assert counting.inner.calls == 0
        report = ws.index()
        assert report.replaced == 10 and report.failed == 0
        assert ws.status()["indexes"]["lite"]["pending"] == 0
        assert ws.index().replaced == 0  # nothing pending: nothing done


def test_search_filters_by_principals_in_every_sink(
    tmp_path: Path, corpus: Path, counting: Counting
) -> None:
    (corpus / "secret").mkdir()
    with open_ws(tmp_path, corpus, counting) as ws:
        ws.sync()
        for index in ("lite", "vectors"):
            staff = ws.search("vacation days", user="a@acme.example", groups=["staff"], index=index)
            assert staff and all(r["source"] == "docs" for r in staff)
            outsider = ws.search("vacation days", user="x@other.example", index=index)
            assert outsider == []


def test_one_paragraph_edit_re_embeds_only_changed_chunks(
    tmp_path: Path, corpus: Path, counting: Counting
) -> None:
    (corpus / "long.md").write_text(LONG_DOC)
    with open_ws(tmp_path, corpus, counting) as ws:
        ws.sync()
        total = ws.document(source="docs", object_id="long.md")["indexes"]["lite"]["chunks"]
        assert total >= 6
        embedded_before = counting.cached.embedded
        edited = LONG_DOC.replace(
            "Sentence 3.5 about topic 3", "Sentence 3.5 now says something new about topic 3"
        )
        (corpus / "long.md").write_text(edited)
        result = ws.sync()
        assert result.runs[0].counts.changed == 1
        re_embedded = counting.cached.embedded - embedded_before
        assert 1 <= re_embedded <= 2, f"{re_embedded} of {total} chunks re-embedded"
        assert result.index.embedded == re_embedded
        assert result.index.cache_hits >= total - 2


def test_acl_change_makes_no_embedder_call_and_changes_visibility(
    tmp_path: Path, corpus: Path, counting: Counting
) -> None:
    with open_ws(tmp_path, corpus, counting) as ws:
        ws.sync()
        assert ws.search("vacation", user="h@acme.example", groups=["hr"]) == []
    calls = counting.inner.calls
    with open_ws(tmp_path, corpus, counting, access='{ groups = ["hr"] }') as ws:
        result = ws.sync()
        assert result.runs[0].counts.changed == 5 and result.runs[0].fetched == 0
        assert result.index.acl_updates == 10 and result.index.replaced == 0
        assert counting.inner.calls == calls, "an ACL-only change must not call the embedder"
        for index in ("lite", "vectors"):
            assert ws.search("vacation", user="h@acme.example", groups=["hr"], index=index)
            assert ws.search("vacation", user="s@acme.example", groups=["staff"], index=index) == []


def test_one_failing_embedding_fails_one_document(tmp_path: Path, corpus: Path) -> None:
    counting = Counting(tmp_path, fail_when=lambda text: "reimbursement" in text)
    with open_ws(tmp_path, corpus, counting) as ws:
        result = ws.sync()
        assert result.index.failed == 1
        failures = ws.failures()
        assert [(f.object_id, f.stage) for f in failures] == [("guides/expenses.md", "embed")]
        assert ws.status()["indexes"]["lite"]["pending"] == 1
        others = ws.document(source="docs", object_id="guides/vacation.md")
        assert others["indexes"]["lite"]["applied_revision"] == 1
        assert (
            ws.document(source="docs", object_id="guides/expenses.md")["indexes"]["lite"][
                "applied_revision"
            ]
            is None
        )


def test_deleted_document_is_removed_from_every_sink_and_verified(
    tmp_path: Path, corpus: Path, counting: Counting
) -> None:
    for n in range(5):
        (corpus / f"pad-{n}.txt").write_text(f"padding file {n}\n")
    with open_ws(tmp_path, corpus, counting) as ws:
        ws.sync()
        doc_id = ws.document(source="docs", object_id="guides/vacation.md")["document_id"]
        (corpus / "guides" / "vacation.md").unlink()
        result = ws.sync()
        assert result.runs[0].counts.deleted == 1 and result.index.deleted == 2
        for name in ("lite", "vectors"):
            assert ws.sink(name).count(doc_id) == 0
            assert all(
                r["document_id"] != doc_id
                for r in ws.search("vacation days", groups=["staff"], index=name)
            )
        doc = ws.document(doc_id)
        assert doc["state"] == "deleted"
        assert doc["indexes"]["lite"]["applied_revision"] == doc["revision"]
        from sqlalchemy import select

        from headwater.manifest.schema import tombstones

        with ws.manifest.engine.connect() as conn:
            row = conn.execute(select(tombstones).where(tombstones.c.document_id == doc_id)).one()
        assert (
            row.reason == "pruned" and row.completed_at is not None and row.detected_at is not None
        )


def test_search_returns_documents_or_chunks(
    tmp_path: Path, corpus: Path, counting: Counting
) -> None:
    (corpus / "long.md").write_text(LONG_DOC)
    with open_ws(tmp_path, corpus, counting) as ws:
        ws.sync()
        docs = ws.search("topic sentence detail", groups=["staff"], mode="keyword", k=5)
        assert len({r["document_id"] for r in docs}) == len(docs)
        chunks = ws.search(
            "topic sentence detail", groups=["staff"], mode="keyword", k=5, per_document=False
        )
        assert len(chunks) == 5 and len({r["document_id"] for r in chunks}) < 5
        assert docs[0]["chunk_id"] == chunks[0]["chunk_id"]
