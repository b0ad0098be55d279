"""The sync runner on a real filesystem corpus, on SQLite and on PostgreSQL manifests.

Covers invariants 3 (skip only on proof), 4 (state written after the work), 9 (absence
is not deletion; the safety fraction), 10 (failures are records) and 11 (checkpoints).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from headwater import Workspace
from workspace_helpers import filesystem_source, write_config


def open_ws(tmp_path: Path, manifest_url: str, corpus: Path, extra: str = "") -> Workspace:
    config = write_config(
        tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus, extra=extra)
    )
    return Workspace.open(config)


def counts(ws: Workspace, **kwargs: object) -> dict[str, int]:
    result = ws.sync(index=False, **kwargs)  # type: ignore[arg-type]
    assert len(result.runs) == 1
    return result.runs[0].counts.as_dict()


def test_first_sync_counts_every_document_new(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        result = ws.sync(index=False)
        run = result.runs[0]
        assert run.status == "succeeded"
        assert run.counts.as_dict() == {
            "seen": 5,
            "new": 5,
            "changed": 0,
            "unchanged": 0,
            "deleted": 0,
            "failed": 0,
            "stale": 0,
        }
        assert run.fetched == 5
        assert run.window_start is None and run.window_end is not None
        doc = ws.document(source="docs", object_id="guides/vacation.md")
        assert doc["revision"] == 1 and doc["state"] == "active"
        assert doc["title"] == "Vacation policy"
        assert doc["access"] == {"users": [], "groups": ["staff"], "public": False}


def test_unchanged_resync_opens_no_file(tmp_path: Path, manifest_url: str, corpus: Path) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
        result = ws.sync(index=False)
        run = result.runs[0]
        assert run.counts.unchanged == 5 and run.counts.seen == 5
        assert run.counts.new == run.counts.changed == 0
        assert run.fetched == 0, "an unchanged re-sync must not open any file"


def test_second_run_window_starts_where_the_first_ended(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        first = ws.sync(index=False).runs[0]
        second = ws.sync(index=False).runs[0]
        assert second.window_start == first.window_end


def test_touch_without_change_is_unchanged_by_checksum(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
        target = corpus / "guides" / "vacation.md"
        later = time.time() + 10
        os.utime(target, (later, later))
        run = ws.sync(index=False).runs[0]
        assert run.counts.unchanged == 5 and run.counts.changed == 0
        assert run.fetched == 1  # the hint changed, so it was read once, then proven equal
        doc = ws.document(source="docs", object_id="guides/vacation.md")
        assert doc["revision"] == 1
        assert doc["source_version"].startswith(str(target.stat().st_mtime_ns))


def test_an_edit_bumps_the_revision_by_one(tmp_path: Path, manifest_url: str, corpus: Path) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
        before = ws.document(source="docs", object_id="guides/expenses.md")
        (corpus / "guides" / "expenses.md").write_text(
            "# Expenses\n\nThe meal limit is now 70 euros.\n"
        )
        assert counts(ws)["changed"] == 1
        after = ws.document(source="docs", object_id="guides/expenses.md")
        assert after["revision"] == before["revision"] + 1
        assert after["checksum"] != before["checksum"]
        assert after["document_id"] == before["document_id"]


def test_corrupt_pdf_and_unknown_extension_are_failure_records(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n%%EOF")
    (corpus / "data.xyz").write_bytes(b"\x00\x01binary")
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        run = ws.sync(index=False).runs[0]
        assert run.status == "completed_with_errors"
        assert run.counts.new == 5 and run.counts.failed == 2
        failures = {f.object_id: f for f in ws.failures()}
        assert failures["broken.pdf"].stage == "parse"
        assert failures["broken.pdf"].error_class == "parse_error"
        assert failures["data.xyz"].error_class == "unsupported_type"
        assert all(f.status == "dead" for f in failures.values())
        # Unchanged broken files are not re-read, and stay failed.
        again = ws.sync(index=False).runs[0]
        assert again.fetched == 0 and again.counts.failed == 2
        # Fixing the file resolves its failure record.
        (corpus / "data.xyz").unlink()
        (corpus / "broken.pdf").unlink()
        fixed = ws.sync(index=False, force=True).runs[0]
        assert fixed.counts.failed == 0
        assert ws.failures() == []


def test_deleted_file_is_pruned_after_a_complete_listing(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    for n in range(6):
        (corpus / f"extra-{n}.txt").write_text(f"extra document number {n}\n")
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
        (corpus / "readme.md").unlink()
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 1
        doc = ws.document(source="docs", object_id="readme.md")
        assert doc["state"] == "deleted" and doc["revision"] == 2
        status = ws.status()["sources"][0]
        assert status["documents"] == 10 and status["deleted"] == 1


def test_prune_past_the_safety_fraction_is_blocked_unless_forced(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
        for path in (corpus / "guides").iterdir():
            path.unlink()
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0
        assert run.prune_blocked == {
            "candidates": 2,
            "active": 5,
            "fraction": 0.4,
            "max_fraction": 0.2,
            "deleted": 0,
        }
        assert run.as_dict()["prune_blocked"]["candidates"] == 2
        assert ws.status()["sources"][0]["documents"] == 5
        forced = ws.sync(index=False, force=True).runs[0]
        assert forced.counts.deleted == 2 and forced.prune_blocked is None


def test_excluded_by_config_is_a_delete_with_that_reason(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
    extra = 'exclude = ["notes/welcome.html"]\n'
    with open_ws(tmp_path, manifest_url, corpus, extra=extra) as ws:
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 1
        doc = ws.document(source="docs", object_id="notes/welcome.html")
        assert doc["state"] == "deleted"
        from sqlalchemy import select

        from headwater.manifest.schema import tombstones

        with ws.manifest.engine.connect() as conn:
            reason = conn.execute(
                select(tombstones.c.reason).where(tombstones.c.document_id == doc["document_id"])
            ).scalar_one()
        assert reason == "excluded_by_config"


def test_acl_change_in_config_bumps_revision_without_reading(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access='{ groups = ["staff", "hr"] }'),
    )
    with Workspace.open(config) as ws:
        run = ws.sync(index=False).runs[0]
        assert run.counts.changed == 5 and run.fetched == 0
        doc = ws.document(source="docs", object_id="readme.md")
        assert doc["access"]["groups"] == ["hr", "staff"]


def test_a_locked_manifest_is_a_transient_error(tmp_path: Path, corpus: Path) -> None:
    import sqlite3

    import pytest

    from headwater.errors import TransientError
    from headwater.manifest.records import BatchCommit, TombstoneWrite

    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync(index=False)
        blocker = sqlite3.connect(tmp_path / "state" / "manifest.db")
        blocker.execute("BEGIN IMMEDIATE")
        ws.manifest.engine.dispose()
        from sqlalchemy import event

        @event.listens_for(ws.manifest.engine, "connect")
        def short_timeout(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            dbapi_connection.execute("PRAGMA busy_timeout=50")

        doc = ws.document(source="docs", object_id="readme.md")
        batch = BatchCommit(
            tombstones=[TombstoneWrite(doc["document_id"], "docs", "readme.md", 2, None, "manual")]
        )
        with pytest.raises(TransientError, match="busy"):
            ws.manifest.commit_batch("run", batch)
        blocker.rollback()
        blocker.close()
        ws.manifest.commit_batch("run", batch)
        assert ws.document(doc["document_id"])["state"] == "deleted"


def test_deleting_one_document_of_a_small_source_is_never_blocked(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    (corpus / "guides" / "vacation.md").unlink()
    (corpus / "guides" / "expenses.md").unlink()
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
        (corpus / "readme.md").unlink()  # 1 of 3: over the fraction, but a single document
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 1 and run.prune_blocked is None


def test_config_exclusions_do_not_count_against_the_safety_fraction(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open_ws(tmp_path, manifest_url, corpus) as ws:
        ws.sync(index=False)
    with open_ws(tmp_path, manifest_url, corpus, extra='exclude = ["guides/**", "notes/**"]') as ws:
        run = ws.sync(index=False).runs[0]
        assert run.prune_blocked is None and run.counts.deleted == 4
        assert ws.status()["sources"][0]["documents"] == 1
