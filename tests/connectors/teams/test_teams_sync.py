"""The teams connector under the real sync runner, against the fake Graph: an edit and a
delete arrive by delta, readers resolve through groups() (team and private channel
members); a listing failing half way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_api_sync import open_workspace, use_secret
from teams_support import populate

from fakes.teams import FakeTeams
from headwater import Workspace


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, graph: FakeTeams) -> None:
    use_secret(monkeypatch, "HW_TEST_GRAPH_TOKEN", graph.token)  # `${ENV}` in headwater.toml


def workspace(graph: FakeTeams, tmp_path: Path, extra: str = "") -> Workspace:
    return open_workspace(
        tmp_path,
        f'id = "teams"\ntype = "teams"\nbase_url = "{graph.url}/v1.0"\n'
        'token = "${HW_TEST_GRAPH_TOKEN}"\nteams = ["t1"]\npage_size = 2\n'
        f"{extra}",
    )


def test_sync_edit_delete_and_channel_readers(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)
    with workspace(graph, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 5), first.counts
        secret = ws.manifest.document_by_object("teams", f"t1/c-priv/{ids['secret']}")
        assert secret is not None and secret.acl == ("group:teams:group:channel:c-priv",)
        ann = {g.group for g in ws.manifest.groups.groups_of("ann@example.com")}
        bob = {g.group for g in ws.manifest.groups.groups_of("bob@example.com")}
        assert "teams:group:channel:c-priv" in ann and "teams:group:channel:c-priv" not in bob
        assert "teams:group:t1" in bob
        quiet = ws.sync(index=False).runs[0]
        assert quiet.counts.changed == 0 and quiet.counts.new == 0, quiet.counts
        graph.edit("t1", "c-gen", ids["hello"], "<p>Hello again</p>")
        graph.delete("t1", "c-gen", ids["lunch"])
        run = ws.sync(index=False).runs[0]
        assert (run.counts.changed, run.counts.deleted) == (1, 1), run.counts


def test_a_listing_failing_half_way_deletes_nothing(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)
    with workspace(graph, tmp_path, "retry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        with graph.lock:  # gone without a delta row the saved links would show
            del graph.teams["t1"][2]["c-gen"].messages[ids["lunch"]]
        graph.floor = graph.seq + 1  # every link expired: a full relist is needed...
        graph.broken.add("/v1.0/teams/t1/channels/c-priv/messages/delta")  # ...and breaks
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("teams", "active") == 5
