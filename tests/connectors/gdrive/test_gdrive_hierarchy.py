"""A Drive file's hierarchy: its folders' names from the top of its drive, then its name;
a scoped search finds only what lies under the folder."""

from __future__ import annotations

from pathlib import Path

from fakes.gdrive import FOLDER, TOKEN, FakeDrive
from headwater import Workspace
from headwater.connectors.gdrive import GdriveConnector
from headwater.scopes import HIERARCHY_KEY, Scope


def _workspace(url: str, tmp_path: Path) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "gd"\ntype = "gdrive"\nbase_url = "{url}"\ntoken = "{TOKEN}"\n'
        'shared_drives = ["sd1"]\n'
    )
    return Workspace.open(config, connector_types={"gdrive": GdriveConnector})


def _hierarchy(ws: Workspace, object_id: str) -> object:
    record = ws.manifest.document_by_object("gd", object_id)
    assert record is not None
    return record.metadata.get(HIERARCHY_KEY)


def test_folder_names_make_the_path_and_scope_a_search(tmp_path: Path) -> None:
    with FakeDrive() as drive:
        drive.drives["sd1"] = "Team"
        drive.put("F1", "Folder", b"", mime=FOLDER, drive_id="sd1")
        drive.put("F2", "Sub", b"", mime=FOLDER, drive_id="sd1", parent="F1")
        drive.put("F3", "Sub-old", b"", mime=FOLDER, drive_id="sd1", parent="F1")
        drive.put("in", "in.txt", "granite inside the sub folder\n", drive_id="sd1", parent="F2")
        drive.put("out", "out.txt", "granite in the sibling\n", drive_id="sd1", parent="F3")
        drive.put("top", "top.txt", "granite at the top\n", drive_id="sd1")
        with _workspace(drive.url, tmp_path) as ws:
            run = ws.sync().runs[0]
            assert run.status == "succeeded", run
            assert _hierarchy(ws, "in") == "Folder/Sub/in.txt"
            assert _hierarchy(ws, "out") == "Folder/Sub-old/out.txt"
            assert _hierarchy(ws, "top") == "top.txt"
            found = ws.search(
                "granite", k=10, user="ann@example.com", scopes=[Scope("gd", "Folder/Sub")]
            )
            assert [r.title for r in found] == ["in.txt"]
            wide = ws.search(
                "granite", k=10, user="ann@example.com", scopes=[Scope("gd", "Folder")]
            )
            assert sorted(r.title for r in wide) == ["in.txt", "out.txt"]
        folder_gets = [r for r in drive.log if r.path == "/drive/v3/files/F1"]
        assert len(folder_gets) == 1, "a folder is read once per run"


def test_my_drive_root_is_not_named(tmp_path: Path) -> None:
    with FakeDrive() as drive:
        drive.put("F1", "Reports", b"", mime=FOLDER)
        drive.put("r", "q3.txt", "quarterly\n", parent="F1")
        connector_ws = tmp_path / "x"
        connector_ws.mkdir()
        config = connector_ws / "headwater.toml"
        config.write_text(
            '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
            '[embedder]\ntype = "fake"\ndimension = 32\n'
            f'[[source]]\nid = "gd"\ntype = "gdrive"\nbase_url = "{drive.url}"\n'
            f'token = "{TOKEN}"\n'
        )
        with Workspace.open(config, connector_types={"gdrive": GdriveConnector}) as ws:
            ws.sync(index=False)
            assert _hierarchy(ws, "r") == "Reports/q3.txt"
