"""``scope`` in ``POST /v1/search`` against a real ``headwater serve``."""

from __future__ import annotations

import pytest
from api_support import Server, wait_for


@pytest.fixture(scope="module")
def synced(server: Server) -> Server:
    with server.client() as c:
        job = c.post("/v1/sources/docs/sync").json()
        wait_for(lambda: c.get(f"/v1/jobs/{job['job_id']}").json()["status"] == "done")
        wait_for(lambda: c.get("/v1/indexes").json()["indexes"]["main"]["pending"] == 0)
    return server


def test_scope_keeps_results_under_the_folder(synced: Server) -> None:
    ask = {"query": "vacation days", "groups": ["staff"], "mode": "keyword"}
    with synced.client("backend") as backend:
        inside = backend.post(
            "/v1/search", json={**ask, "scope": [{"source": "docs", "path": "guides"}]}
        )
        assert inside.status_code == 200, inside.text
        locators = [r["locator"] for r in inside.json()["results"]]
        assert locators and all("/guides/" in loc for loc in locators)
        for path in ("guide", "guides/vacation", "elsewhere"):
            r = backend.post(
                "/v1/search", json={**ask, "scope": [{"source": "docs", "path": path}]}
            )
            assert r.json()["results"] == [], path
        whole = backend.post("/v1/search", json={**ask, "scope": [{"source": "docs"}]})
        assert whole.json()["results"]
        # An empty list is no scope, as for `sources`.
        everything = backend.post("/v1/search", json=ask).json()["results"]
        assert backend.post("/v1/search", json={**ask, "scope": []}).json()["results"] == everything
        unknown = backend.post("/v1/search", json={**ask, "scope": [{"source": "payroll"}]})
        assert unknown.status_code == 400 and "payroll" in unknown.text
        dots = backend.post(
            "/v1/search", json={**ask, "scope": [{"source": "docs", "path": "../x"}]}
        )
        assert dots.status_code == 400 and "'..'" in dots.text
        extra = backend.post("/v1/search", json={**ask, "scope": [{"source": "docs", "x": 1}]})
        assert extra.status_code == 422
