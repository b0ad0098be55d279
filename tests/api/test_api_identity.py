"""Issue 31, through a real ``headwater serve``: aliases from ``[identity] aliases_file``
and nested subgroups in pushed groups, both expanded at search time.

A file edited while the server runs counts at its next search (no restart, no source
re-read); a pushed group holding another pushed group opens its documents to the inner
group's members, transitively and through a cycle, and removing the edge (the next
version of the outer group) hides them at once. ``whois`` (the CLI, on the same
workspace) shows the alias's line and the group the membership came through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_support import Server, make_workspace, server_env, wait_for
from typer.testing import CliRunner

from headwater.cli.app import register_commands
from ports import free_port

EXTRA = '\n[[source]]\nid = "people"\ntype = "push"\n\n[identity]\naliases_file = "aliases.csv"\n'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("identity")
    (root / "aliases.csv").write_text("alias,user\ngithub:ann,ann@acme.test\n")
    config = make_workspace(root, EXTRA, ingest_sources=("inbox", "people"))
    with Server(config, free_port(), root / "server.log") as srv:
        yield srv


def titles(backend: httpx.Client, query: str, user: str) -> set[str]:
    body = {"query": query, "user": user, "mode": "keyword"}
    answer = backend.post("/v1/search", json=body)
    assert answer.status_code == 200, answer.text
    return {h["title"] for h in answer.json()["results"]}


def whois(config: Path, user: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.chdir(config.parent)
    for name, value in server_env().items():
        if name.startswith("HW_"):
            monkeypatch.setenv(name, value)
    result = CliRunner().invoke(register_commands(), ["whois", user, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_an_alias_file_edited_while_serving_counts_at_the_next_search(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = {
        "version": 1,
        "title": "heron note",
        "text": "The heron survey starts in April.",
        "access": {"users": ["github:ann"]},
    }
    with server.client("ingest") as ingest, server.client("backend") as backend:
        assert ingest.put("/v1/sources/inbox/documents/heron", json=note).status_code == 200
        wait_for(lambda: titles(backend, "heron survey", "ann@acme.test") == {"heron note"})
        assert titles(backend, "heron survey", "bob@acme.test") == set()
        origin = f"{server.config.parent / 'aliases.csv'} line 2"
        assert whois(server.config, "ann@acme.test", monkeypatch)["alias_origins"] == {
            "github:ann": origin
        }
        (server.config.parent / "aliases.csv").write_text("github:ann,bob@acme.test\n")
        assert titles(backend, "heron survey", "bob@acme.test") == {"heron note"}
        assert titles(backend, "heron survey", "ann@acme.test") == set()


def test_a_nested_pushed_group_opens_documents_until_the_edge_goes(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = {
        "version": 1,
        "title": "osprey plan",
        "text": "The osprey launch is planned for June.",
        "access": {"groups": ["people:group:eng"]},
    }
    with server.client("ingest") as ingest, server.client("backend") as backend:
        assert ingest.put("/v1/sources/people/documents/plan", json=plan).status_code == 200

        def sees(user: str) -> bool:
            return titles(backend, "osprey launch", user) == {"osprey plan"}

        outer = ingest.put(
            "/v1/groups/people/eng", json={"version": 1, "members": [], "groups": ["platform"]}
        )
        assert outer.status_code == 200, outer.text
        assert (outer.json()["members"], outer.json()["groups"]) == (0, 1)
        inner = {"version": 1, "members": ["carol@acme.test"], "groups": ["sre"]}
        assert ingest.put("/v1/groups/people/platform", json=inner).status_code == 200
        # sre holds eng again: a cycle, followed once
        deepest = {"version": 1, "members": ["dave@acme.test"], "groups": ["eng"]}
        assert ingest.put("/v1/groups/people/sre", json=deepest).status_code == 200
        wait_for(lambda: sees("carol@acme.test"))
        assert sees("dave@acme.test") and not sees("erin@acme.test")
        shown = whois(server.config, "dave@acme.test", monkeypatch)
        assert shown["synced_groups"] == [
            {"group": "people:group:sre", "source": "people"},
            {"group": "people:group:platform", "source": "people", "via": "people:group:sre"},
            {"group": "people:group:eng", "source": "people", "via": "people:group:platform"},
        ]
        # the edge eng -> platform goes with eng's next version: hidden at once
        cut = ingest.put("/v1/groups/people/eng", json={"version": 2, "members": []})
        assert cut.json()["status"] == "changed" and cut.json()["groups"] == 0
        assert not sees("carol@acme.test") and not sees("dave@acme.test")
        # an older version cannot bring the edge back
        late = {"version": 1, "members": [], "groups": ["platform"]}
        assert ingest.put("/v1/groups/people/eng", json=late).status_code == 409
        assert not sees("carol@acme.test")
        bad = {"version": 3, "members": [], "groups": ["a/b"]}
        assert ingest.put("/v1/groups/people/eng", json=bad).status_code == 400
