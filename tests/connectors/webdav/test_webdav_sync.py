"""The webdav connector under the real sync runner, against WsgiDAV: a no-op re-sync
downloads nothing; an edit, an add, a delete and a move.
"""

from __future__ import annotations

from pathlib import Path

from webdav_support import PASSWORD, USER, DavServer

from headwater import Workspace
from headwater.connectors.webdav import WebdavConnector


def _workspace(url: str, tmp_path: Path) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "dav"\ntype = "webdav"\nurl = "{url}"\n'
        f'username = "{USER}"\npassword = "{PASSWORD}"\n'
        "prune_max_fraction = 0.9\naccess = { public = true }\n"
    )
    return Workspace.open(config, connector_types={"webdav": WebdavConnector})


def _seed(folder: Path, *names: str) -> None:
    """Markdown files at ``names`` (paths under ``folder``), folders made as needed."""
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"# {name}\n\nText of {name}.\n")


def test_sync_edit_add_delete_move(
    dav_server: DavServer, share: tuple[str, Path], tmp_path: Path
) -> None:
    url, folder = share
    under = "/" + folder.name + "/"
    _seed(folder, *("a.md", "b.md", "sub/c.md", "sub/d.md"))
    with _workspace(url, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 4, 4)
        gets = dav_server.count("GET", under)
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.fetched) == (4, 0)
        assert dav_server.count("GET", under) == gets, "a no-op re-sync must not GET"
        (folder / "a.md").write_text("# a.md\n\nEdited, and longer than before.\n")
        (folder / "new.md").write_text("# new\n")
        (folder / "b.md").unlink()
        (folder / "sub" / "c.md").rename(folder / "moved.md")
        third = ws.sync(index=False).runs[0]
        c = third.counts
        assert (c.new, c.changed, c.deleted, c.unchanged) == (2, 1, 2, 1), c


def test_a_collection_whose_listing_fails_deletes_nothing(
    dav_server: DavServer, share: tuple[str, Path], tmp_path: Path
) -> None:
    url, folder = share
    _seed(folder, *("a.md", "sub/c.md", "sub/d.md"))
    with _workspace(url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 3
        (folder / "sub" / ".fail-propfind").write_text("")  # PROPFIND of sub/ answers 500
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("completed_with_errors", 0), run
        assert ws.manifest.count_documents("dav", "active") == 3
        (failure,) = ws.failures("dav")
        assert (failure.stage, failure.object_id) == ("enumerate", "sub"), failure
        (folder / "sub" / ".fail-propfind").unlink()
        (folder / "sub" / "d.md").unlink()  # a real delete still arrives once listing works
        healed = ws.sync(index=False).runs[0]
        assert (healed.status, healed.counts.deleted) == ("succeeded", 1), healed


def test_members_listed_without_their_properties_are_kept_not_deleted(
    dav_server: DavServer, share: tuple[str, Path], tmp_path: Path
) -> None:
    url, folder = share
    _seed(folder, *("a.md", "b.md", "sub/c.md"))
    with _workspace(url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 3
        # the server now lists b.md and sub/ with 403 propstats: present, not readable
        (folder / ".withhold-props.list").write_text("b.md\nsub\n")
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("completed_with_errors", 0), run
        assert ws.manifest.count_documents("dav", "active") == 3
        failures = {f.object_id: f for f in ws.failures("dav")}
        failures.pop(".withhold-props.list")  # the marker itself: a file of no supported type
        assert set(failures) == {"b.md", "sub"}, failures
        assert failures["b.md"].error_class == "unreadable_member"
        assert "403" in failures["b.md"].message
        (folder / ".withhold-props.list").unlink()
        (folder / "b.md").unlink()  # a real delete still arrives once it is listed again
        healed = ws.sync(index=False).runs[0]
        assert (healed.status, healed.counts.deleted) == ("succeeded", 1), healed


def test_a_root_url_with_percent_escapes_reads_its_files(
    decoding_dav_server: DavServer, tmp_path: Path
) -> None:
    """A folder name with a space is written `%20` in `url`; the listing gives the path
    unquoted. Ids stay relative to the root, downloads and sub-collections work."""
    url = decoding_dav_server.url + "/"
    root = decoding_dav_server.root / "Team Share"
    (root / "sub dir").mkdir(parents=True)
    (root / "notes.md").write_text("# Notes\n\nMangoes.\n")
    (root / "sub dir" / "deep file.md").write_text("# Deep\n\nNectarines.\n")
    with _workspace(url + "Team%20Share/", tmp_path) as ws:
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.new, run.counts.failed) == ("succeeded", 2, 0), run
        for object_id in ("notes.md", "sub dir/deep file.md"):
            assert ws.document(source="dav", object_id=object_id)["state"] == "active"
