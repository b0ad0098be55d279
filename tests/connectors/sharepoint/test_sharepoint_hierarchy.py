"""A SharePoint item's hierarchy path: its folder inside its library, then its name."""

from __future__ import annotations

from headwater.connectors.sharepoint._connector import library_path


def test_the_path_after_root_and_the_name() -> None:
    item = {"name": "plan.docx", "parentReference": {"path": "/drives/b!x/root:/Team/Q3"}}
    assert library_path(item) == "Team/Q3/plan.docx"
    at_root = {"name": "a.txt", "parentReference": {"path": "/drives/b!x/root:"}}
    assert library_path(at_root) == "a.txt"
    assert library_path({"name": "b.txt"}) == "b.txt"
