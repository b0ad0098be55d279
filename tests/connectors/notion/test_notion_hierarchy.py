"""A Notion page's hierarchy: the ids of the pages and databases above it, then its own;
a scope on a page finds it and what lies under it, nothing beside it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from declared import use_declared_connectors

from fakes.notion import FakeNotion, Page, paragraph
from headwater import Workspace
from headwater.scopes import HIERARCHY_KEY, Scope

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def _id(page: Page) -> str:
    return page.id.replace("-", "")


def test_parent_chain_makes_the_path_and_scopes_a_search(
    notion: FakeNotion, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_declared_connectors(monkeypatch)
    handbook = notion.add(Page("Handbook", [paragraph("granite top")], T0))
    under = {"type": "page_id", "page_id": handbook.id}
    onboarding = notion.add(Page("Onboarding", [paragraph("granite one")], T0, parent=under))
    deep = notion.add(
        Page("Deep", [paragraph("granite two")], T0,
             parent={"type": "page_id", "page_id": onboarding.id})
    )  # fmt: skip
    notion.databases["db-1"] = under
    row = notion.add(
        Page("Row", [paragraph("granite row")], T0,
             parent={"type": "database_id", "database_id": "db-1"})
    )  # fmt: skip
    hidden = notion.add(Page("Hidden", [], T0, shared=False))
    orphan = notion.add(
        Page("Orphan", [paragraph("granite orphan")], T0,
             parent={"type": "page_id", "page_id": hidden.id})
    )  # fmt: skip
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "nt"\ntype = "notion"\nbase_url = "{notion.url}"\n'
        f'token = "{notion.token}"\naccess = {{ public = true }}\n'
    )
    with Workspace.open(config) as ws:
        assert ws.sync().runs[0].status == "succeeded"

        def path(page: Page) -> object:
            record = ws.manifest.document_by_object("nt", f"page/{page.id}")
            assert record is not None
            return record.metadata[HIERARCHY_KEY]

        assert path(handbook) == _id(handbook)
        assert path(deep) == f"{_id(handbook)}/{_id(onboarding)}/{_id(deep)}"
        assert path(row) == f"{_id(handbook)}/db1/{_id(row)}"
        assert path(orphan) == f"{_id(hidden)}/{_id(orphan)}"  # its parent is not shared
        found = ws.search(
            "granite", k=10, scopes=[Scope("nt", f"{_id(handbook)}/{_id(onboarding)}")]
        )
        assert sorted(r.title for r in found) == ["Deep", "Onboarding"]
        rows = ws.search("granite", k=10, scopes=[Scope("nt", f"{_id(handbook)}/db1")])
        assert [r.title for r in rows] == ["Row"]
    gets = [c for c in notion.log if c.path == f"/v1/pages/{handbook.id}"]
    assert len(gets) <= 2, "a parent is read once per run (plus the page's own fetch)"
