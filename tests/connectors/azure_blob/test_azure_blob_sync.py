"""The azure_blob connector under the real sync runner against Azurite: an unchanged
container downloads nothing, a changed object is re-read, a deleted one is tombstoned after
a complete listing, and a listing that breaks part way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure_support import DEV_ACCOUNT, Azurite
from declared import use_declared_connectors
from faultproxy import FaultProxy

from headwater import Workspace
from headwater.connectors.azure_blob._auth import DEV_KEY

# The module starts Azurite (a process), so the unit tier (--fast) leaves it out.
pytestmark = pytest.mark.process


def downloads(proxy: FaultProxy) -> int:
    """Get Blob requests made through the proxy (every GET that is not a listing)."""
    return proxy.count("GET") - proxy.count("GET", "comp=list")


def test_sync_is_incremental_and_deletes_only_after_a_complete_listing(
    azurite_server: Azurite,
    proxy: FaultProxy,
    container: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_declared_connectors(monkeypatch)
    monkeypatch.setenv("AZURE_TEST_KEY", DEV_KEY)
    for i in range(6):
        azurite_server.put(container, f"notes/{i}.md", f"# Note {i}\n\nText.\n", "text/markdown")
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "notes"\ntype = "azure_blob"\ncontainer = "{container}"\n'
        f'account_url = "{proxy.url}/{DEV_ACCOUNT}"\naccount_key = "${{AZURE_TEST_KEY}}"\n'
        "page_size = 4\n"
        "retry_attempts = 1\nprune_max_fraction = 0.5\naccess = { public = true }\n"
    )
    with Workspace.open(config) as ws:
        ws.validate("notes")  # what `headwater validate notes` runs
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 6, 6)
        media = downloads(proxy)
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.fetched) == (6, 0)
        assert downloads(proxy) == media
        azurite_server.put(container, "notes/1.md", "# Note 1\n\nEdited.\n", "text/markdown")
        azurite_server.delete(container, "notes/2.md")
        proxy.fault = lambda method, path: 403 if "marker=" in path else None
        broken = ws.sync(index=False).runs[0]
        assert broken.status == "failed" and broken.counts.deleted == 0
        assert ws.document(source="notes", object_id="notes/2.md")["state"] == "active"
        proxy.fault = None
        third = ws.sync(index=False).runs[0]
        counts = third.counts
        assert (counts.changed, counts.unchanged, counts.deleted, third.fetched) == (1, 4, 1, 1)
        assert ws.document(source="notes", object_id="notes/2.md")["state"] == "deleted"
