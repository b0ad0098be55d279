"""A workspace syncs into OpenSearch (the fake) and searches it: the index type from
``headwater.toml``, its password from ``${ENV}``, ACLs, deletes and reconcile end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.opensearch import FakeOpensearch
from headwater import Workspace
from headwater.sinks.opensearch import OpensearchSink
from workspace_helpers import filesystem_source, write_config


def test_a_workspace_indexes_into_opensearch_and_searches_it(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HW_TEST_OS_PASSWORD", "s3cret-key")
    with FakeOpensearch(user="admin", password="s3cret-key") as fake:
        indexes = (
            f'[[index]]\nname = "main"\ntype = "opensearch"\nurl = "{fake.url}"\n'
            'username = "admin"\npassword = "${HW_TEST_OS_PASSWORD}"\nreplicas = 0\n'
        )
        config = write_config(
            tmp_path, manifest_url=None, indexes=indexes, sources=filesystem_source(corpus)
        )
        with Workspace.open(config, sink_types={"opensearch": OpensearchSink}) as ws:
            ws.sync()
            for mode in ("keyword", "vector", "hybrid"):
                hits = ws.search("vacation days per year", groups=["staff"], mode=mode)
                assert hits, mode
                assert any("vacation" in h.locator for h in hits), mode
                assert ws.search("vacation days per year", groups=["other"], mode=mode) == []
            (corpus / "guides" / "vacation.md").unlink()
            ws.sync()
            hits = ws.search("vacation days per year", groups=["staff"], mode="keyword")
            assert not any("vacation" in h.locator for h in hits)
            report = ws.reconcile()
            drift = report.sinks["main"]
            assert drift.checked > 0 and drift.drifted == 0
            assert fake.aliases["headwater_main"] == {"headwater_main__g1"}
            # The password (a SecretStr option) is never recorded with the generation.
            recorded = ws.live_generation("main").settings["sink"]["options"]
            assert "password" not in recorded and recorded["username"] == "admin"
            assert "s3cret-key" not in json.dumps(ws.rebuild_status().as_dict())
            # A rebuild's switch moves the read alias; a rollback moves it back.
            assert ws.rebuild(["main"], force=True).as_dict()["indexes"][0]["result"] == "switched"
            assert fake.aliases["headwater_main"] == {"headwater_main__g2"}
            ws.rebuild_rollback("main")
            assert fake.aliases["headwater_main"] == {"headwater_main__g1"}
            ws.rebuild(["main"], force=True, switch=False)
            ws.rebuild_switch("main")
            assert fake.aliases["headwater_main"] == {"headwater_main__g3"}
