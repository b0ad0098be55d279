"""The sharepoint targeted read: a hint re-reads exactly the named files by id (the item,
its permissions, its content), never a delta; a delete hint for a file that still exists
deletes nothing; one for a gone file tombstones it; a library the source does not read
is dropped.
"""

from __future__ import annotations

from pathlib import Path

from hinting import hinted, state_of

from fakes.sharepoint import SITE, TOKEN, FakeGraph, user_grant
from headwater import Workspace
from headwater.connectors.sharepoint import SharepointConnector


def _workspace(url: str, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "sp"\ntype = "sharepoint"\nbase_url = "{url}/v1.0"\n'
        f'token = "{TOKEN}"\nsite = "{SITE}"\n'
        "page_size = 2\nretry_attempts = 3\nretry_initial_wait = 0.01\n" + extra
    )
    return Workspace.open(config, connector_types={"sharepoint": SharepointConnector})


def _items_asked(graph: FakeGraph) -> set[str]:
    """The drive items the connector asked for (``drive/item``), by any item route."""
    with graph.lock:
        return {
            "/".join(p[2:5:2]) for c in graph.log
            if len(p := c.path.removeprefix("/v1.0").split("/")) > 4 and p[3] == "items"
        }  # fmt: skip


def test_a_hint_reads_exactly_its_file_content_and_acl(graph: FakeGraph, tmp_path: Path) -> None:
    with _workspace(graph.url, tmp_path) as ws:
        ws.sync(index=False)
        graph.put("lib1", "i1", "a.txt", "Alpha, edited.\n")
        graph.put("lib1", "i3", "c.txt", "Not hinted: not read.\n")
        graph.share("lib2", "j1", [user_grant("bob@contoso.com")])
        graph.log.clear()
        read = hinted(ws, "sp", ["lib1/i1", "lib2/j1"])
        assert read.counts is not None and read.counts["changed"] == 2, read
        assert _items_asked(graph) == {"lib1/i1", "lib2/j1"}
        assert graph.count("/v1.0/drives/lib1/root") + graph.count("/v1.0/drives/lib2/root") == 0
        assert graph.count("/download/lib1/i1") == 1 and graph.count("/download/lib2") == 0
        record = ws.manifest.document_by_object("sp", "lib2/j1")
        assert record is not None and record.acl == ("user:bob@contoso.com",)
        assert state_of(ws, "sp", "lib1/i3") == ("active", 1)


def test_a_delete_hint_for_a_file_that_exists_deletes_nothing(
    graph: FakeGraph, tmp_path: Path
) -> None:
    with _workspace(graph.url, tmp_path) as ws:
        ws.sync(index=False)
        read = hinted(ws, "sp", ["lib1/i2"], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 0
        assert state_of(ws, "sp", "lib1/i2") == ("active", 1)


def test_a_delete_hint_for_a_gone_file_tombstones_it(graph: FakeGraph, tmp_path: Path) -> None:
    with _workspace(graph.url, tmp_path) as ws:
        ws.sync(index=False)
        graph.delete("lib1", "i2")
        graph.log.clear()
        read = hinted(ws, "sp", ["lib1/i2"], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 1
        state = state_of(ws, "sp", "lib1/i2")
        assert state is not None and state[0] != "active"
        assert _items_asked(graph) == {"lib1/i2"} and graph.count("/v1.0/drives/lib1/root") == 0


def test_a_library_the_source_does_not_read_is_dropped(graph: FakeGraph, tmp_path: Path) -> None:
    with _workspace(graph.url, tmp_path, 'libraries = ["Documents"]\n') as ws:
        ws.sync(index=False)
        read = hinted(ws, "sp", ["lib2/j1", "lib1/i1"])
        assert read.dropped == 1 and ws.manifest.document_by_object("sp", "lib2/j1") is None
