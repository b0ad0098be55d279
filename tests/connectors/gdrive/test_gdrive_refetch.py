"""The gdrive targeted read: a hint re-reads exactly the named files by ``files.get``
(content and ACL), never ``files.list`` or ``changes.list``; a delete hint for a file
that still exists deletes nothing; one for a removed or trashed file tombstones it; a
file outside ``shared_drives`` is dropped.
"""

from __future__ import annotations

from pathlib import Path

from hinting import hinted, state_of

from fakes.gdrive import TOKEN, FakeDrive
from headwater import Workspace
from headwater.connectors.gdrive import GdriveConnector


def _workspace(url: str, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "gd"\ntype = "gdrive"\nbase_url = "{url}"\ntoken = "{TOKEN}"\n'
        "page_size = 2\nretry_attempts = 3\nretry_initial_wait = 0.01\n" + extra
    )
    return Workspace.open(config, connector_types={"gdrive": GdriveConnector})


def _files_asked(drive: FakeDrive) -> set[str]:
    """The file ids the connector asked for by id (any files/{id} route but the root)."""
    with drive.lock:
        return {
            p[4] for r in drive.log
            if len(p := r.path.split("/")) >= 5 and p[3] == "files" and p[4] != "root"
        }  # fmt: skip


def _listings(drive: FakeDrive) -> int:
    """Requests to files.list or changes.list."""
    with drive.lock:
        return sum(r.path in ("/drive/v3/files", "/drive/v3/changes") for r in drive.log)


def test_a_hint_reads_exactly_its_file_content_and_acl(drive: FakeDrive, tmp_path: Path) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        ws.sync(index=False)
        drive.put("a", "a.txt", "Alpha, edited.\n")
        drive.put("c", "Budget", "q1,q2\n3,4\n", mime="application/vnd.google-apps.spreadsheet")
        drive.share("d", [{"type": "user", "role": "reader", "emailAddress": "bob@example.com"}])
        drive.log.clear()
        read = hinted(ws, "gd", ["a", "d"])
        assert read.counts is not None and read.counts["changed"] == 2, read
        assert _files_asked(drive) == {"a", "d"}
        assert _listings(drive) == 0, "a targeted read lists nothing"
        assert sum(r.query.get("alt") == "media" for r in drive.log) == 1  # a's bytes only
        record = ws.manifest.document_by_object("gd", "d")
        assert record is not None and record.acl == ("user:bob@example.com",)
        assert state_of(ws, "gd", "c") == ("active", 1)  # not hinted: not read


def test_a_delete_hint_for_a_file_that_exists_deletes_nothing(
    drive: FakeDrive, tmp_path: Path
) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        ws.sync(index=False)
        read = hinted(ws, "gd", ["b"], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 0
        assert state_of(ws, "gd", "b") == ("active", 1)


def test_a_delete_hint_for_a_gone_file_tombstones_it(drive: FakeDrive, tmp_path: Path) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        ws.sync(index=False)
        drive.remove("a")
        drive.trash("b")
        drive.log.clear()
        read = hinted(ws, "gd", ["a", "b"], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 2, read
        for file_id in ("a", "b"):
            state = state_of(ws, "gd", file_id)
            assert state is not None and state[0] != "active"
        assert _files_asked(drive) == {"a", "b"} and _listings(drive) == 0


def test_a_file_outside_the_shared_drives_is_dropped(drive: FakeDrive, tmp_path: Path) -> None:
    with _workspace(drive.url, tmp_path, 'shared_drives = ["sd1"]\n') as ws:
        ws.sync(index=False)
        read = hinted(ws, "gd", ["a", "d"])
        assert read.dropped == 1 and ws.manifest.document_by_object("gd", "a") is None
