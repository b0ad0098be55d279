"""Every v1 endpoint and the auth rules, against a real ``headwater serve`` process."""

from __future__ import annotations

import hmac

import httpx
import pytest
from api_support import KEYS, Server, wait_for

from headwater.api.auth import KeyRing
from headwater.config import ApiKeySection
from headwater.errors import ConfigError


@pytest.fixture(scope="module")
def synced(server: Server) -> Server:
    with server.client() as c:
        job = c.post("/v1/sources/docs/sync").json()
        assert job["run_id"], job
        wait_for(lambda: c.get(f"/v1/jobs/{job['job_id']}").json()["status"] == "done")
        wait_for(lambda: c.get("/v1/indexes").json()["indexes"]["main"]["pending"] == 0)
    return server


def test_no_key_is_401_and_wrong_role_is_403(synced: Server) -> None:
    with synced.client(None) as anon:
        r = anon.post("/v1/search", json={"query": "vacation"})
        assert r.status_code == 401
        assert set(r.json()) == {"error"} and "Bearer" in r.json()["error"]
        assert anon.get("/v1/status", headers={"Authorization": "Bearer nope"}).status_code == 401
    with synced.client("search") as search:
        r = search.get("/v1/status")
        assert r.status_code == 403 and "admin" in r.json()["error"]
        put = search.put("/v1/sources/inbox/documents/x", json={"version": 1, "text": "x"})
        assert put.status_code == 403
    with synced.client("ingest") as ingest:
        assert ingest.post("/v1/search", json={"query": "x"}).status_code == 403
    with synced.client("admin") as admin:  # admin implies every role
        assert admin.post("/v1/search", json={"query": "vacation"}).status_code == 200


def test_keys_never_appear_in_logs_or_errors(synced: Server) -> None:
    wrong = KEYS["admin"][:-1] + "X"
    with synced.client(None) as anon:
        r = anon.get("/v1/status", headers={"Authorization": f"Bearer {wrong}"})
        assert wrong not in r.text
    with synced.client("search") as search:
        r = search.get("/v1/dlq")
        assert KEYS["search"] not in r.text
    log = synced.log.read_text()
    for secret in [*KEYS.values(), wrong]:
        assert secret not in log


def test_keys_are_compared_in_constant_time_against_every_key() -> None:
    calls: list[tuple[bytes, bytes]] = []

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return hmac.compare_digest(a, b)

    sections = [
        ApiKeySection(name=f"k{i}", secret=f"secret-number-{i}-padding", role="search")
        for i in range(3)
    ]
    ring = KeyRing.from_config(sections)
    ring.compare = spy
    found = ring.identify("secret-number-0-padding")
    assert found is not None and found.name == "k0"
    assert len(calls) == 3  # no early exit on the first match
    assert all(len(a) == 32 and len(b) == 32 for a, b in calls)  # hashes, never secrets
    assert ring.identify("secret-number-9-padding") is None


def test_two_keys_with_one_secret_are_a_config_error() -> None:
    # The first key silently won: an "admin" and a "search" key sharing a secret.
    sections = [
        ApiKeySection(name="ops", secret="shared-secret-0123456789", role="admin"),
        ApiKeySection(name="app", secret="shared-secret-0123456789", role="search"),
    ]
    with pytest.raises(ConfigError, match=r"\(name=ops\) and \(name=app\) have the same"):
        KeyRing.from_config(sections)


def test_framework_errors_say_what_to_do(server: Server) -> None:
    with server.client() as admin:
        missing = admin.get("/v1/nope")
        assert missing.status_code == 404 and "/openapi.json" in missing.json()["error"]
        wrong = admin.patch("/v1/status")
        assert wrong.status_code == 405 and "PATCH /v1/status" in wrong.json()["error"]
        latin1 = admin.post(
            "/v1/search",
            content='{"query": "café"}'.encode("latin-1"),
            headers={"content-type": "application/json"},
        )
        assert latin1.status_code == 422 and "UTF-8" in latin1.json()["error"]


def test_search_principals_fixed_asserted_or_public(synced: Server) -> None:
    with synced.client("search") as app:  # fixed: ann, group staff
        titles = [
            r["title"] for r in app.post("/v1/search", json={"query": "vacation"}).json()["results"]
        ]
        assert "Vacation policy" in titles
        r = app.post("/v1/search", json={"query": "vacation", "groups": ["other"]})
        assert r.status_code == 403
    with synced.client("backend") as backend:
        hits = backend.post("/v1/search", json={"query": "vacation", "user": "bob@acme.test"})
        assert hits.json()["results"] == []  # bob is not in staff
        staff = backend.post(
            "/v1/search", json={"query": "vacation", "groups": ["staff"], "k": 1, "mode": "keyword"}
        ).json()
        assert [r["title"] for r in staff["results"]] == ["Vacation policy"]
        chunks = backend.post(
            "/v1/search", json={"query": "vacation", "groups": ["staff"], "chunks": True}
        ).json()["results"]
        assert chunks and {"document_id", "chunk_id", "snippet", "score"} <= set(chunks[0])


def test_status_sources_runs_indexes(synced: Server) -> None:
    with synced.client() as c:
        status = c.get("/v1/status").json()
        assert {s["id"] for s in status["sources"]} == {"docs", "inbox"}
        assert (
            c.get("/v1/sources").json()["sources"][0]["documents"] == 3
        )  # broken.pdf: metadata-only
        runs = c.get("/v1/runs", params={"source": "docs"}).json()["runs"]
        assert runs and runs[0]["source"] == "docs"
        one = c.get(f"/v1/runs/{runs[0]['run_id']}").json()
        assert one["run_id"] == runs[0]["run_id"]
        phases = one["phases"]  # seconds per phase, kept with the run (migration 0017)
        assert set(phases) == {"read", "fetch_parse", "commit", "prune"}
        assert all(v >= 0 for v in phases.values()) and sum(phases.values()) <= one["duration_s"]
        assert c.get("/v1/runs/nope").status_code == 404
        assert c.get("/v1/runs", params={"source": "nope"}).status_code == 400
        assert "main" in c.get("/v1/indexes").json()["indexes"]
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz").json()
        assert ready["status"] == "ready" and ready["checks"]["index:main"] == "ok"


def test_pause_resume_and_sync_conflict(synced: Server) -> None:
    with synced.client() as c:
        assert c.post("/v1/sources/docs/pause").json() == {
            "source": "docs",
            "paused": True,
            "changed": True,
        }
        assert c.get("/v1/sources").json()["sources"][0]["paused"] is True
        assert c.post("/v1/sources/docs/resume").json()["changed"] is True
        assert c.post("/v1/sources/nope/pause").status_code == 400
        assert c.post("/v1/sources/nope/sync").status_code == 400


def test_documents_failures_dlq_reconcile(synced: Server) -> None:
    with synced.client() as c:
        doc = c.get("/v1/documents", params={"source": "docs", "object": "guides/vacation.md"})
        assert doc.status_code == 200 and doc.json()["title"] == "Vacation policy"
        by_id = c.get(f"/v1/documents/{doc.json()['document_id']}").json()
        assert by_id["indexes"]["main"]["applied_revision"] == 1
        assert c.get("/v1/documents/none").status_code == 404
        assert c.get("/v1/documents", params={"source": "docs"}).status_code == 400
        failures = c.get("/v1/failures", params={"source": "docs"}).json()["failures"]
        assert [f["object_id"] for f in failures] == ["broken.pdf"]
        entries = c.get("/v1/dlq").json()["entries"]
        assert [e["object_id"] for e in entries] == ["broken.pdf"]
        entry = entries[0]["id"]
        assert c.get(f"/v1/dlq/{entry}").json()["stage"] == "parse"
        redriven = c.post("/v1/dlq/redrive", json={"ids": [entry]}).json()
        assert redriven == {"redriven": 1, "resolved": 0, "still_failing": 1}
        assert c.post("/v1/dlq/redrive", json={}).status_code == 400
        rec = c.post("/v1/reconcile", json={}).json()
        assert rec["sinks"]["main"]["in_sync"] is True
        assert c.post("/v1/reconcile", json={"sink": "nope"}).status_code == 400
        entry = c.get("/v1/dlq").json()["entries"][0]["id"]
        assert c.delete(f"/v1/dlq/{entry}").json() == {"dropped": 1}
        assert c.delete(f"/v1/dlq/{entry}").status_code == 404
        assert c.get("/v1/dlq").json()["entries"] == []


def test_validation_errors_are_one_line_json(synced: Server) -> None:
    with synced.client() as c:
        r = c.post("/v1/search", json={"query": ""})
        assert r.status_code == 422 and "\n" not in r.json()["error"]
        r = c.post("/v1/search", content=b"not json", headers={"content-type": "application/json"})
        assert r.status_code == 422


def test_metrics_exposition(synced: Server) -> None:
    with synced.client("backend") as b:
        b.post("/v1/search", json={"query": "vacation", "mode": "vector"})
    text = httpx.get(synced.url + "/metrics").text  # open on loopback
    for name in (
        'headwater_documents{source="docs",state="active"} 3.0',
        'headwater_index_pending{generation="1",index="main"} 0.0',
        "headwater_dlq_depth",
        "headwater_dlq_oldest_age_seconds",
        "headwater_failed_deletes",
        'headwater_runs_total{source="docs"',
        "headwater_run_duration_seconds_bucket",
        "headwater_chunks_embedded_total",
        "headwater_embedding_cache_hits_total",
        'headwater_search_latency_seconds_count{mode="vector"}',
        'headwater_lease_takeovers_total{source="docs"} 0.0',
    ):
        assert name in text, name
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")}
    assert all(n.startswith("headwater_") for n in names)


def test_nul_in_search_text_is_a_422_not_a_500(synced: Server) -> None:
    # Found by schemathesis: a NUL reached the keyword index's MATCH and failed there.
    with synced.client("backend") as c:
        for body in ({"query": "a\x00b"}, {"query": "x", "groups": ["g\x00"]}):
            r = c.post("/v1/search", json={**body, "mode": "keyword"})
            assert r.status_code == 422 and "NUL" in r.json()["error"]


def test_openapi_documents_bearer_auth_and_the_real_error_body(server: Server) -> None:
    # FastAPI's own 422 schema said {"detail": [...]}, and no security scheme was declared.
    with server.client(None) as anonymous, server.client() as admin:
        schema = anonymous.get("/openapi.json").json()
        unknown = anonymous.post("/v1/search", json={"query": "x"})
        invalid = admin.post("/v1/search", json={"query": ""})
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    error = schema["components"]["schemas"]["Error"]
    search = schema["paths"]["/v1/search"]["post"]
    assert search["security"] == [{"HTTPBearer": []}]
    for code in ("401", "403", "422", "default"):
        ref = search["responses"][code]["content"]["application/json"]["schema"]["$ref"]
        assert ref == "#/components/schemas/Error"
    assert unknown.status_code == 401 and set(unknown.json()) <= set(error["properties"])
    assert invalid.status_code == 422 and set(invalid.json()) <= set(error["properties"])
    assert "security" not in schema["paths"]["/healthz"]["get"]
