"""Search answers from the indexes but never past the manifest, the truth.

An index can hold a document's old ACL, or the document itself, for a while after the
manifest has changed: ``sync --no-index``, an ACL update pending or dead-lettered, an
index restored from an old copy. The service checks its results against the manifest,
so a revoked or deleted document is never returned in that window, and the top-k is
still filled from what the caller may see.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.pipeline.embed.fake import FakeEmbedder
from workspace_helpers import filesystem_source, write_config

MODES = ["keyword", "vector", "hybrid"]


def _open(tmp_path: Path, secret_access: str) -> Workspace:
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(tmp_path / "secret", "secret", access=secret_access)
        + filesystem_source(tmp_path / "team", "team", access='{ groups = ["staff"] }'),
    )
    return Workspace.open(config, embedder=FakeEmbedder(32))


@pytest.fixture
def folders(tmp_path: Path) -> Path:
    secret = tmp_path / "secret"
    secret.mkdir()
    # Forty pages that say "merger" far more often than the team's three.
    for n in range(40):
        (secret / f"plan{n}.md").write_text(
            f"# Plan {n}\n\n" + "The merger merger merger terms, draft {n}. " * 20,
            encoding="utf-8",
        )
    team = tmp_path / "team"
    team.mkdir()
    for name in ("north", "south", "west"):
        (team / f"{name}.md").write_text(
            f"# {name}\n\nThe {name} office heard about the merger at lunch.\n", encoding="utf-8"
        )
    with _open(tmp_path, '{ groups = ["staff"] }') as ws:
        ws.sync()
    return tmp_path


def _names(results: list) -> set[str]:  # type: ignore[type-arg]
    return {r.locator.rsplit("/", 1)[-1] for r in results}


@pytest.mark.parametrize("mode", MODES)
def test_a_revoked_document_is_not_returned_before_the_index_applies_it(
    folders: Path, mode: str
) -> None:
    with _open(folders, '{ groups = ["board"] }') as ws:
        ws.sync(index=False)  # the manifest says board only; the index still says staff
        assert (
            ws.document(source="secret", object_id="plan0.md").indexes["main"]["applied_revision"]
            is not None
        )
        found = ws.search("merger", groups=["staff"], k=3, mode=mode)
        # nothing of the secret source, and the top 3 filled from what staff may see
        assert _names(found) == {"north.md", "south.md", "west.md"}
        assert {r.source for r in ws.search("merger", groups=["staff"], k=50, mode=mode)} == {
            "team"
        }
        chunks = ws.search("merger", groups=["staff"], k=5, mode=mode, per_document=False)
        assert {r.source for r in chunks} == {"team"}
        # the new ACL's readers see them already where the index agrees once applied
        ws.index()
        assert len(ws.search("merger", groups=["board"], k=50, mode=mode)) == 40


@pytest.mark.parametrize("mode", MODES)
def test_a_deleted_document_is_not_returned_before_the_index_applies_it(
    folders: Path, mode: str
) -> None:
    (folders / "team" / "north.md").unlink()
    with _open(folders, '{ groups = ["staff"] }') as ws:
        ws.sync(index=False)
        found = ws.search("office lunch", groups=["staff"], k=50, mode=mode)
        assert "north.md" not in _names(found)
        assert {"south.md", "west.md"} <= _names(found)


def test_the_manifest_check_names_only_active_documents_the_caller_may_see(
    folders: Path,
) -> None:
    with _open(folders, '{ groups = ["staff"] }') as ws:
        plan = ws.document(source="secret", object_id="plan0.md")
        north = ws.document(source="team", object_id="north.md")
        ids = [plan.record.document_id, north.record.document_id, "no-such-document"]
        assert ws.manifest.visible_to(ids, ["group:staff"]) == {
            plan.record.document_id,
            north.record.document_id,
        }
        assert ws.manifest.visible_to(ids, ["group:board", "public"]) == set()
