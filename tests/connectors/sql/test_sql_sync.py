"""The sql connector under the real sync runner: unchanged rows are not re-read, an edit
is one change, a deleted row is pruned after the complete listing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sql_support import Database, workspace_config

from headwater import Workspace
from headwater.sync.known import ManifestVersions


def test_sync_follows_the_table(db: Database, docs: str, tmp_path: Path) -> None:
    config = workspace_config(
        tmp_path,
        db,
        docs,
        'id_columns = ["id"]\ncontent_template = "# {title}\\n\\n{body}\\n"\n'
        'media_type = "text/markdown"\naccess_column = "readers"\nprune_max_fraction = 0.5\n',
    )
    with Workspace.open(config) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4)
        assert ws.document(source="rows", object_id="1")["title"] == "Alpha"
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.counts.changed) == (4, 0)
        db.execute(f"UPDATE {docs} SET body = 'edited' WHERE id = 1")
        db.execute(f"DELETE FROM {docs} WHERE id = 4")
        third = ws.sync(index=False).runs[0]
        counts = third.counts
        assert (counts.changed, counts.unchanged, counts.deleted) == (1, 2, 1)


FULLWIDTH_KIM = "user:\uff4bim@x.com"  # fullwidth k: NFKC reads it as kim@x.com


def _titles(ws: Workspace, user: str) -> set[str]:
    return {h["title"] for h in ws.search("body", user=user, k=50, mode="keyword")}


def test_one_row_with_a_lookalike_principal_fails_alone_and_revocations_still_apply(
    db: Database, docs: str, tmp_path: Path
) -> None:
    db.execute(f"UPDATE {docs} SET readers = 'user:kim@x.com' WHERE id = 1")
    db.execute(f"UPDATE {docs} SET readers = 'user:bob@x.com, user:kim@x.com' WHERE id = 2")
    config = workspace_config(
        tmp_path,
        db,
        docs,
        'id_columns = ["id"]\ncontent_template = "# {title}\\n\\n{body}\\n"\n'
        'title_column = "title"\naccess_column = "readers"\n',
    )
    with Workspace.open(config) as ws:
        assert ws.sync().runs[0].status == "succeeded"
        assert _titles(ws, "kim@x.com") == {"Alpha", "Beta"}
        assert _titles(ws, "bob@x.com") == {"Beta", "Delta"}
        # Row 1 now names a look-alike of kim; bob is revoked on row 2 in the same change.
        db.execute(f"UPDATE {docs} SET readers = :r WHERE id = 1", r=f'["{FULLWIDTH_KIM}"]')
        db.execute(f"UPDATE {docs} SET readers = 'user:kim@x.com' WHERE id = 2")
        run = ws.sync().runs[0]
        assert (run.status, run.counts.failed, run.counts.changed) == (
            "completed_with_errors", 1, 1,
        ), run  # fmt: skip
        (failure,) = ws.failures("rows")
        assert (failure.object_id, failure.error_class) == ("1", "invalid_principal")
        assert FULLWIDTH_KIM[5:] in failure.message and failure.message.startswith("1: ")
        assert _titles(ws, "bob@x.com") == {"Delta"}  # the revocation applied
        assert _titles(ws, "kim@x.com") == {"Beta"}  # row 1 is withheld, not served stale
        held = ws.manifest.document_by_object("rows", "1")
        assert held is not None and held.acl == ()
        db.execute(f"UPDATE {docs} SET readers = 'user:kim@x.com' WHERE id = 1")
        fixed = ws.sync().runs[0]
        assert (fixed.status, fixed.counts.failed) == ("succeeded", 0), fixed
        assert ws.failures("rows") == []
        assert _titles(ws, "kim@x.com") == {"Alpha", "Beta"}


def test_a_padded_principal_in_an_array_is_refused_not_trimmed(
    db: Database, docs: str, tmp_path: Path
) -> None:
    db.execute(f"UPDATE {docs} SET readers = :r WHERE id = 1", r='["user:kim@x.com "]')
    config = workspace_config(
        tmp_path,
        db,
        docs,
        'id_columns = ["id"]\ncontent_template = "# {title}\\n\\n{body}\\n"\n'
        'title_column = "title"\naccess_column = "readers"\n',
    )
    with Workspace.open(config) as ws:
        run = ws.sync().runs[0]
        assert (run.status, run.counts.new, run.counts.failed) == ("completed_with_errors", 3, 1)
        (failure,) = ws.failures("rows")
        assert (failure.object_id, failure.error_class) == ("1", "invalid_principal")
        assert "Alpha" not in _titles(ws, "kim@x.com")


def test_a_no_op_asks_the_manifest_once_a_page_not_once_a_row(
    db: Database, docs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = ", ".join(f"({100 + i}, 'Row {i}', 'body {i}', 'group:staff')" for i in range(1, 251))
    db.execute(f"INSERT INTO {docs} (id, title, body, readers) VALUES {rows}")
    config = workspace_config(
        tmp_path,
        db,
        docs,
        'id_columns = ["id"]\ncontent_template = "# {title}\\n\\n{body}\\n"\n'
        'access_column = "readers"\npage_size = 100\n',
    )
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 254
        single: list[str] = []
        pages: list[int] = []
        one, many = ManifestVersions.__call__, ManifestVersions.many
        monkeypatch.setattr(
            ManifestVersions, "__call__", lambda s, i: single.append(i) or one(s, i)
        )
        monkeypatch.setattr(
            ManifestVersions, "many", lambda s, ids: pages.append(len(ids)) or many(s, ids)
        )
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.counts.changed, again.counts.new) == (254, 0, 0)
        assert single == [] and pages == [100, 100, 54], (len(single), pages)
        db.execute(f"UPDATE {docs} SET body = 'edited' WHERE id = 150")
        edited = ws.sync(index=False, full=True).runs[0]  # full: held hints certify nothing
        assert (edited.counts.changed, edited.counts.unchanged) == (1, 253), edited.counts
