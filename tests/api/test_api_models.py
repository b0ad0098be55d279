"""Every JSON route has a response model, and the models answer today's bodies unchanged.

The route walk reads the app's own routes, so a new JSON endpoint without a
``response_model`` fails here (the non-JSON answers are listed by name). The bodies are
the workspace's own reports over a small synced workspace, put through FastAPI's
response serialization with each route's model and flags: the answer must be the same
JSON, key for key and in the same order, and every key must be declared by its model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_support import KEYS, Server, make_workspace
from fastapi.routing import APIRoute, serialize_response
from pydantic import BaseModel

from headwater.api.app import create_app
from headwater.api.guard import api_routes
from headwater.api.models import Body
from headwater.api.service import Job, RebuildJob, open_workspace
from headwater.hints.queue import queue
from headwater.manifest.schedule import ScheduleStore
from headwater.reports import failure_dict
from headwater.sync.push import PushOp
from headwater.sync.sessions import session_dict
from headwater.types import SourceDocument
from headwater.workspace import Workspace

# Answers that are not JSON: Prometheus text, the admin page's HTML and its form posts
# (redirects). Every other operation must declare its body.
NOT_JSON = {
    "GET /metrics",
    "GET /admin/login",
    "POST /admin/login",
    "POST /admin/logout",
    "GET /admin",
    "GET /admin/sources/{source_id}",
    "POST /admin/sources/{source_id}/sync",
    "POST /admin/sources/{source_id}/{action}",
    "GET /admin/failures",
    "POST /admin/failures/{action}",
    "GET /admin/dlq",
    "POST /admin/dlq/{entry_id}/{action}",
    "GET /admin/indexes",
    "POST /admin/indexes/{name}/{action}",
    "GET /admin/runs/{run_id}",
    "GET /admin/documents/{document_id}",
    "GET /admin/charts",
    "GET /admin/search",
}


def routes() -> dict[str, APIRoute]:
    app = create_app("unused.toml")  # the routes only: the lifespan does not run
    return {f"{m} {r.path}": r for r in api_routes(app) for m in r.methods}


def test_every_json_route_declares_its_response_model() -> None:
    found = routes()
    assert set(found) >= NOT_JSON, sorted(NOT_JSON - set(found))
    missing = [
        op
        for op, route in found.items()
        if op not in NOT_JSON
        and not (isinstance(route.response_model, type) and issubclass(route.response_model, Body))
    ]
    assert not missing, f"JSON routes without a response model: {missing}"


def test_the_schema_shows_every_response_body() -> None:
    app = create_app("unused.toml")
    schema = app.openapi()
    shown = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if f"{method.upper()} {path}" in NOT_JSON:
                continue
            ok = next(v for k, v in operation["responses"].items() if k.startswith("2"))
            ref = ok["content"]["application/json"]["schema"].get("$ref", "")
            assert ref.startswith("#/components/schemas/"), (method, path, ok)
            shown.append(ref.rsplit("/", 1)[1])
    assert {"StatusBody", "SearchBody", "RebuildJobBody", "PushResultBody"} <= set(shown)
    assert schema["components"]["schemas"]["RunRow"]["properties"]["short_id"]["type"] == "string"


def _undeclared(value: Any, where: str = "body") -> list[str]:
    """Keys a validated body carries that its model does not declare."""
    out: list[str] = []
    if isinstance(value, BaseModel):
        out += [f"{where}.{k}" for k in value.model_extra or {}]
        for name in type(value).model_fields:
            out += _undeclared(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _undeclared(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            out += _undeclared(item, f"{where}.{key}")
    return out


def _same_order(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same_order(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_order(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def answered(route: APIRoute, body: dict[str, Any]) -> Any:
    """``body`` as the route answers it: validated by its model, then dumped."""
    field = route.response_field
    assert field is not None
    return asyncio.run(
        serialize_response(
            field=field,
            response_content=body,
            exclude_unset=route.response_model_exclude_unset,
            exclude_none=route.response_model_exclude_none,
            exclude_defaults=route.response_model_exclude_defaults,
        )
    )


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as env:
        for name, secret in [
            ("HW_ADMIN_KEY", KEYS["admin"]),
            ("HW_INGEST_KEY", KEYS["ingest"]),
            ("HW_SEARCH_KEY", KEYS["search"]),
            ("HW_BACKEND_KEY", KEYS["backend"]),
        ]:
            env.setenv(name, secret)
        workspace = open_workspace(make_workspace(root))
        try:
            workspace.sync(["docs"])
            yield workspace
        finally:
            workspace.close()


def _doc(object_id: str, version: int, text: str) -> SourceDocument:
    return SourceDocument(
        object_id=object_id,
        locator=f"push://inbox/{object_id}",
        title=object_id,
        version=str(version),
        content=text.encode(),
        media_type="text/plain",
        sequence=version,
    )


def _push(ws: Workspace, object_id: str, version: int, text: str) -> dict[str, Any]:
    doc = SourceDocument(
        object_id=object_id,
        locator=f"push://inbox/{object_id}",
        title=object_id,
        version=str(version),
        content=text.encode(),
        media_type="text/plain",
        sequence=version,
    )
    return ws.push("inbox", [PushOp("upsert", object_id, version, doc)])[0].as_dict()


CELERY = {
    "type": "celery",
    "running": {"docs": "host:1"},
    "queued": {"inbox": "task-1"},
    "index_claims": {"host:2": 3},
    "checked_at": "2026-01-01T00:00:00Z",
    "queues": {"headwater": 0, "error": "ConnectionError: the broker is down"},
}


def variants(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sources of a status, plus a source no longer configured whose last run
    carries every key a run only sometimes has."""
    row = next(s for s in sources if s["last_run"] is not None)
    last_run = {
        **row["last_run"],
        "error": "boom",
        "fetched": 3,
        "deletes": "capped",
        "note": "the listing stopped at a configured cap",
        "prune_blocked": {"candidates": 9, "fraction": 0.5},
        "resumed": True,
    }
    keys = ("id", "type", "documents", "deleted", "failures_open")
    gone = {**{k: row[k] for k in keys}, "last_run": last_run, "configured": False}
    lease = {"owner": "host:1", "expires_at": None}
    return [*sources, {**row, "lease": lease}, gone]


def session_samples(ws: Workspace) -> Iterator[tuple[str, dict[str, Any]]]:
    """The bodies of push sessions and group push, from the workspace itself."""
    sessions = ws.push_sessions("inbox")
    opened = sessions.open()
    yield "POST /v1/sources/{source_id}/sessions", session_dict(opened, sessions.idle)
    sent = sessions.send(opened.session_id, [PushOp("upsert", "s", 1, _doc("s", 1, "s"))])
    page = "PUT /v1/sources/{source_id}/sessions/{session_id}/documents"
    yield page, {"results": [r.as_dict() for r in sent]}
    got = sessions.get(opened.session_id)
    yield "GET /v1/sources/{source_id}/sessions/{session_id}", session_dict(got, sessions.idle)
    done = sessions.complete(opened.session_id, force=True).as_dict()
    yield "POST /v1/sources/{source_id}/sessions/{session_id}:complete", done
    other = sessions.open()
    aborted = sessions.abort(other.session_id)
    yield (
        "POST /v1/sources/{source_id}/sessions/{session_id}:abort",
        session_dict(aborted, sessions.idle),
    )
    group = ws.push_group("inbox", "eng", ["ann@acme.test"], 1).as_dict()
    yield "PUT /v1/groups/{source_id}/{group}", group
    yield "DELETE /v1/groups/{source_id}/{group}", ws.push_group("inbox", "eng", None, 2).as_dict()


def samples(ws: Workspace, tmp: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(operation, body) pairs: what each endpoint answers, from the workspace itself."""
    assert queue(ws.runtime, "docs", ["guides/vacation.md"], origin="github") == 1
    yield "POST /v1/hooks/{source_id}", {"queued": 1}
    status = ws.status().as_dict()
    assert status["sources"][0]["hints"]["queued"] == 1
    yield "GET /v1/status", status
    yield "GET /v1/sources", {"sources": status["sources"]}
    yield "GET /v1/status", {**status, "executor": CELERY, "sources": variants(status["sources"])}
    yield "GET /v1/indexes", {"indexes": status["indexes"]}
    hits = ws.search("vacation", groups=["staff"], mode="keyword")
    assert hits
    yield "POST /v1/search", {"results": [h.as_dict() for h in hits]}
    runs = ScheduleStore(ws.manifest.engine).list_runs(None, None, 20)
    yield "GET /v1/runs", {"runs": runs}
    yield "GET /v1/runs/{run_id}", runs[0]
    document = ws.document(hits[0].document_id).as_dict()
    yield "GET /v1/documents/{document_id}", document
    yield "GET /v1/documents", document
    failures = [failure_dict(f) for f in ws.failures()]
    assert failures  # broken.pdf
    yield "GET /v1/failures", {"failures": failures}
    yield "GET /v1/dlq", {"entries": failures}
    yield "GET /v1/dlq/{entry_id}", failures[0]
    yield "GET /v1/failures/summary", ws.failure_summary().as_dict()
    yield "DELETE /v1/dlq/{entry_id}", {"dropped": 1}
    yield "POST /v1/reconcile", ws.reconcile(None).as_dict()
    yield "POST /v1/dlq/redrive", {"redriven": 1, "resolved": 0, "still_failing": 1}
    yield "PUT /v1/sources/{source_id}/documents/{object_id:path}", _push(ws, "a", 2, "x")
    stale = _push(ws, "a", 1, "older")
    assert "current_version" in stale
    yield "POST /v1/sources/{source_id}/documents:batch", {"results": [stale]}
    deleted = ws.push("inbox", [PushOp("delete", "a", 3)])[0].as_dict()
    assert deleted["status"] == "deleted"
    yield "DELETE /v1/sources/{source_id}/documents/{object_id:path}", deleted
    yield from session_samples(ws)
    job = Job("j", "docs", status="done", run_id=runs[0]["run_id"])
    yield "GET /v1/jobs/{job_id}", job.as_dict()
    yield "POST /v1/sources/{source_id}/sync", Job("k", "docs").as_dict()
    yield "POST /v1/sources/{source_id}/pause", {"source": "docs", "paused": True, "changed": True}
    yield (
        "POST /v1/sources/{source_id}/resume",
        {"source": "docs", "paused": False, "changed": False},
    )
    yield "GET /healthz", {"status": "ok"}
    yield "GET /readyz", {"status": "not ready", "checks": {"manifest": "ok"}, "error": "x"}
    ws.index()
    built = ws.rebuild(["main"], force=True)
    assert built["indexes"][0]["result"] == "switched"
    yield "GET /v1/rebuilds/jobs/{job_id}", RebuildJob("r", ["main"], True, True).as_dict()
    done = RebuildJob("r", None, False, False, status="done", report=built)
    yield "POST /v1/rebuilds/jobs", done.as_dict()
    yield "POST /v1/rebuilds", built.as_dict()
    yield "POST /v1/rebuilds/{name}/rollback", ws.rebuild_rollback("main").as_dict()
    yield "GET /v1/rebuilds", ws.rebuild_status().as_dict()
    ready = ws.rebuild(["main"], force=True, switch=False)
    assert ready["indexes"][0]["result"] == "ready"
    yield "POST /v1/rebuilds/{name}/switch", ws.rebuild_switch("main").as_dict()
    ws.rebuild(["main"], force=True, switch=False)
    yield "POST /v1/rebuilds/{name}/cancel", ws.rebuild_cancel("main").as_dict()
    yield "POST /v1/rebuilds/{name}/retire", ws.rebuild_retire("main").as_dict()
    up_to_date = ws.rebuild(["main"]).as_dict()
    assert up_to_date["indexes"][0]["result"] == "up_to_date"
    yield "POST /v1/rebuilds", up_to_date
    yield (
        "POST /v1/rebuilds/jobs",
        RebuildJob("u", None, False, True, "done", ws.rebuild()).as_dict(),
    )


def test_the_models_answer_todays_bodies_unchanged(ws: Workspace, tmp_path: Path) -> None:
    found = routes()
    checked, wrong = set(), []
    for operation, body in samples(ws, tmp_path):
        route = found[operation]
        answer = answered(route, body)
        if not _same_order(answer, body):
            wrong.append(f"{operation}: answers {answer!r}, the report is {body!r}")
        assert route.response_field is not None
        validated, _errors = route.response_field.validate(body, {}, loc=("response",))
        if undeclared := _undeclared(validated):
            wrong.append(f"{operation}: keys its model does not declare: {undeclared}")
        checked.add(operation)
    assert not wrong, "\n".join(wrong)
    json_routes = {op for op in found if op not in NOT_JSON}
    assert json_routes - checked == set(), "operations without a sample body"


def test_a_real_server_answers_bodies_its_models_declare(server: Server) -> None:
    """The HTTP path itself (FastAPI's JSON fast path): each body validates against its
    route's model and carries no key the model does not declare."""
    found = routes()
    wrong = []
    with server.client() as c:
        assert c.post("/v1/sources/docs/sync").status_code == 202
        for path, operation in [
            ("/healthz", "GET /healthz"),
            ("/readyz", "GET /readyz"),
            ("/v1/status", "GET /v1/status"),
            ("/v1/sources", "GET /v1/sources"),
            ("/v1/indexes", "GET /v1/indexes"),
            ("/v1/runs", "GET /v1/runs"),
            ("/v1/failures", "GET /v1/failures"),
            ("/v1/failures/summary", "GET /v1/failures/summary"),
            ("/v1/dlq", "GET /v1/dlq"),
            ("/v1/rebuilds", "GET /v1/rebuilds"),
        ]:
            response = c.get(path)
            assert response.status_code == 200, (path, response.text)
            field = found[operation].response_field
            assert field is not None
            validated, errors = field.validate(response.json(), {}, loc=("response",))
            if errors or _undeclared(validated):
                wrong.append(f"{operation}: {errors or _undeclared(validated)}")
    assert not wrong, "\n".join(wrong)
