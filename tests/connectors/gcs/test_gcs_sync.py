"""The gcs connector under the real sync runner against fake-gcs-server: an unchanged
bucket downloads nothing, a changed object is re-read, a deleted one is tombstoned after
a complete listing, and a listing that breaks part way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from declared import use_declared_connectors
from faultproxy import FaultProxy
from gcs_support import GcsServer

from headwater import Workspace

# The module starts fake-gcs-server (a process), so the unit tier (--fast) leaves it out.
pytestmark = pytest.mark.process


def test_sync_is_incremental_and_deletes_only_after_a_complete_listing(
    gcs_server: GcsServer,
    proxy: FaultProxy,
    bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_declared_connectors(monkeypatch)
    for i in range(6):
        gcs_server.put(bucket, f"notes/{i}.md", f"# Note {i}\n\nText.\n", "text/markdown")
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "notes"\ntype = "gcs"\nbucket = "{bucket}"\n'
        f'endpoint_url = "{proxy.url}"\nanonymous = true\npage_size = 4\n'
        "retry_attempts = 1\nprune_max_fraction = 0.5\naccess = { public = true }\n"
    )
    with Workspace.open(config) as ws:
        ws.validate("notes")  # what `headwater validate notes` runs
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 6, 6)
        media = proxy.count("GET", "alt=media")
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.fetched) == (6, 0)
        assert proxy.count("GET", "alt=media") == media
        gcs_server.put(bucket, "notes/1.md", "# Note 1\n\nEdited.\n", "text/markdown")
        gcs_server.delete(bucket, "notes/2.md")
        proxy.fault = lambda method, path: 403 if "pageToken=" in path else None
        broken = ws.sync(index=False).runs[0]
        assert broken.status == "failed" and broken.counts.deleted == 0
        assert ws.document(source="notes", object_id="notes/2.md")["state"] == "active"
        proxy.fault = None
        third = ws.sync(index=False).runs[0]
        counts = third.counts
        assert (counts.changed, counts.unchanged, counts.deleted, third.fetched) == (1, 4, 1, 1)
        assert ws.document(source="notes", object_id="notes/2.md")["state"] == "deleted"
