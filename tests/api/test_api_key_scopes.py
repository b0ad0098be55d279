"""Key scopes: an ingest key writes only to the push sources it names, and the errors a
search or ingest key gets never list source ids it cannot see."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import KEYS, Server, make_workspace

from headwater.config import load_config
from headwater.errors import ConfigError
from ports import free_port

UNSCOPED = "unscoped-secret-0123456789abcdef"
EXTRA = f"""
[[source]]
id = "hr"
type = "push"

[[api.keys]]
name = "unscoped"
secret = "{UNSCOPED}"
role = "ingest"
"""


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("scopes")
    with Server(make_workspace(root, EXTRA), free_port(), root / "server.log") as srv:
        yield srv


def others_named(message: str, *allowed: str) -> list[str]:
    """The configured source ids ``message`` names, quoted or not, besides ``allowed``."""
    return [
        s for s in ("docs", "inbox", "hr") if re.search(rf"\b{s}\b", message) and s not in allowed
    ]


def test_an_ingest_key_writes_only_to_the_sources_it_names(scoped: Server) -> None:
    with scoped.client("ingest") as loader, scoped.client() as admin:
        assert loader.put(
            "/v1/sources/inbox/documents/a", json={"version": 1, "text": "a"}
        ).is_success
        for attempt in (
            loader.put("/v1/sources/hr/documents/a", json={"version": 1, "text": "salaries"}),
            loader.delete("/v1/sources/hr/documents/a", params={"version": 2}),
            loader.post(
                "/v1/sources/hr/documents:batch",
                json={"operations": [{"object_id": "a", "version": 1, "text": "salaries"}]},
            ),
        ):
            assert attempt.status_code == 403, attempt.text
            error = attempt.json()["error"]
            assert "may not push to source 'hr'" in error and "may push to: 'inbox'" in error
            assert "sources = [...]" in error
        missing = admin.get("/v1/documents", params={"source": "hr", "object": "a"})
        assert missing.status_code == 404  # nothing was written
        # An id that is no source at all: the same 403, naming no configured source.
        nope = loader.put("/v1/sources/nope/documents/a", json={"version": 1, "text": "a"})
        assert nope.status_code == 403 and others_named(nope.json()["error"], "inbox") == []


def test_an_ingest_key_without_sources_writes_nowhere(scoped: Server) -> None:
    headers = {"Authorization": f"Bearer {UNSCOPED}"}
    with scoped.client(None) as client:
        r = client.put(
            "/v1/sources/inbox/documents/b", json={"version": 1, "text": "b"}, headers=headers
        )
    assert r.status_code == 403
    assert "may push to: none" in r.json()["error"]
    assert others_named(r.json()["error"], "inbox") == []  # only the id it sent


def test_an_admin_key_pushes_to_every_push_source(scoped: Server) -> None:
    with scoped.client() as admin:
        r = admin.put("/v1/sources/hr/documents/c", json={"version": 1, "text": "c"})
        assert r.status_code == 200 and r.json()["status"] == "new"


def test_a_search_key_is_not_told_the_configured_sources(scoped: Server) -> None:
    with scoped.client("search") as app, scoped.client("backend") as backend:
        for client in (app, backend):
            r = client.post("/v1/search", json={"query": "vacation", "sources": ["payroll"]})
            assert r.status_code == 400 and "'payroll'" in r.json()["error"]
            assert others_named(r.json()["error"]) == [], r.json()["error"]
        known = app.post("/v1/search", json={"query": "vacation", "sources": ["docs"]})
        assert known.status_code == 200
    with scoped.client() as admin:  # an admin sees the sources anyway (GET /v1/sources)
        r = admin.post("/v1/search", json={"query": "vacation", "sources": ["payroll"]})
        assert r.status_code == 400 and "expected one of: docs, inbox, hr" in r.json()["error"]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ('role = "search"\nsources = ["inbox"]', "only an ingest key is scoped to sources"),
        ('role = "ingest"\nsources = ["inbx"]', "'inbx' is not a configured push source"),
        ('role = "ingest"\nsources = ["docs"]', "'docs' is not a configured push source"),
    ],
)
def test_key_sources_are_checked_when_the_config_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, expected: str
) -> None:
    for name, env in (
        ("admin", "HW_ADMIN_KEY"),
        ("ingest", "HW_INGEST_KEY"),
        ("search", "HW_SEARCH_KEY"),
        ("backend", "HW_BACKEND_KEY"),
    ):
        monkeypatch.setenv(env, KEYS[name])
    extra = f'\n[[api.keys]]\nname = "extra"\nsecret = "extra-secret-0123456789abcdef"\n{key}\n'
    config = make_workspace(tmp_path, extra)
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert expected in str(caught.value)
    assert "api.keys[0] (name=extra).sources" in str(caught.value)
