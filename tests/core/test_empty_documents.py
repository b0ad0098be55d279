"""A document emptied in its source leaves every index (issue 23, item 11).

A file truncated to 0 bytes (to retract a leaked token) used to become an
``empty_document`` failure while its old revision stayed searchable, even after
``sync --full``. An empty document is the source's true state: it is tombstoned (reason
``empty_document``), its chunks are deleted from every index and verified gone, and the
failure record says why; text coming back makes it active again.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from headwater import Workspace
from headwater.manifest.schema import tombstones
from workspace_helpers import filesystem_source, write_config

TOKEN = "hunter2quokka"


def indexes(directory: Path) -> str:
    return (
        '[[index]]\nname = "lite"\ntype = "sqlite"\n\n'
        f'[[index]]\nname = "vectors"\ntype = "qdrant"\npath = "{directory / "qdrant"}"\n'
    )


def found(ws: Workspace, mode: str, query: str = TOKEN) -> set[str]:
    """The files (paths under the corpus) found by ``query``."""
    return {
        h.locator.split("/corpus/", 1)[1] for h in ws.search(query, groups=["staff"], mode=mode)
    }


def test_a_file_truncated_to_nothing_is_searchable_nowhere_even_after_a_full_sync(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    leaked = corpus / "notes" / "token.txt"
    leaked.write_text(f"The deploy token is {TOKEN}, keep it secret.\n")
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus),
        indexes=indexes(tmp_path),
    )
    with Workspace.open(config) as ws:
        ws.sync()
        assert found(ws, "keyword") == {"notes/token.txt"}
        assert "notes/token.txt" in found(ws, "vector")
        leaked.write_bytes(b"")  # retract the token
        run = ws.sync().runs[0]
        assert found(ws, "keyword") == set(), "the retracted token is still searchable"
        assert (run.counts.deleted, run.counts.failed) == (1, 1)
        for _ in range(2):  # a plain sync, then a full one: the old text never comes back
            assert found(ws, "keyword") == set()
            assert "notes/token.txt" not in found(ws, "vector")
            assert "notes/token.txt" not in found(ws, "hybrid", "deploy token secret")
            doc = ws.document(source="docs", object_id="notes/token.txt")
            assert doc["state"] == "deleted"
            [failure] = ws.failures(source="docs")
            assert (failure.object_id, failure.error_class) == ("notes/token.txt", "empty_document")
            sinks = ws.reconcile()["sinks"]
            assert set(sinks) == {"lite", "vectors"} and all(s["in_sync"] for s in sinks.values())
            full = ws.sync(full=True).runs[0]
            assert full.counts.deleted == 0  # already deleted: no second tombstone
        with ws.manifest.engine.connect() as conn:
            reasons = [r[0] for r in conn.execute(select(tombstones.c.reason))]
        assert reasons == ["empty_document"]
        leaked.write_text(f"The token {TOKEN} was rotated; this one is harmless.\n")
        back = ws.sync().runs[0]
        assert back.counts.new == 1
        assert found(ws, "keyword") == {"notes/token.txt"}
        assert ws.failures(source="docs") == []
