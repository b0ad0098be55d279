"""Names nothing calls stay gone: each was found unused by grep over src, tests, docs,
examples, bench and scripts, and deleted (issue 24). A name coming back needs a caller."""

from __future__ import annotations

import importlib

import pytest

REMOVED = (
    ("headwater.workspace", "Workspace", "tombstone_age_limit"),
    ("headwater.workspace", "Workspace", "run_counts"),
    ("headwater.manifest.runs", "RunLedger", "save_counts"),
    ("headwater.manifest.content", "ContentStore", "has"),
    ("headwater.errors", None, "StaleWrite"),
    ("headwater.api.auth", None, "ROLES"),
    ("headwater.connectors.imap._client", None, "_UIDVALIDITY"),
    ("headwater.manifest.generations", None, "STATES"),
    ("headwater.pipeline.embed.onnx_prepare", None, "RUNTIMES"),
)


@pytest.mark.parametrize(("module", "owner", "name"), REMOVED)
def test_a_removed_dead_name_is_not_back(module: str, owner: str | None, name: str) -> None:
    found = importlib.import_module(module)
    holder = getattr(found, owner) if owner else found
    assert not hasattr(holder, name), f"{module}.{owner or ''}.{name} is back; who calls it?"
