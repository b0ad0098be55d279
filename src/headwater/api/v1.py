"""API v1, everyday operations: search, status, sources, runs, indexes, health.

Each endpoint is the CLI command of the same name over the same Workspace call, and
answers the JSON the command's ``--json`` prints.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import Field
from sqlalchemy import text

from headwater.api.auth import Caller, require
from headwater.api.deps import service_of
from headwater.api.hygiene import CleanModel
from headwater.api.models import (
    HealthBody,
    IndexesBody,
    JobBody,
    PauseBody,
    ReadyBody,
    RunRow,
    RunsBody,
    SearchBody,
    SourcesBody,
    StatusBody,
)
from headwater.errors import ConfigError, NotFoundError
from headwater.manifest.runs import lease_owner
from headwater.manifest.schedule import ScheduleStore
from headwater.scopes import Scope

router = APIRouter()
Json = dict[str, Any]
RunStatus = Literal["running", "succeeded", "completed_with_errors", "failed", "cancelled"]


class ScopeBody(CleanModel):
    """One entry of ``scope``: documents of ``source`` at or under the folder ``path``
    (``""``: the whole source); boundary-safe, ``a`` never matches ``a-x``."""

    source: str = Field(min_length=1, max_length=200)
    path: str = Field(default="", max_length=4000)


class SearchRequest(CleanModel):
    """The body of ``POST /v1/search``."""

    query: str = Field(min_length=1, max_length=4000)
    user: str | None = Field(default=None, max_length=320)
    groups: list[str] = Field(default=[], max_length=1000)
    k: int = Field(default=10, ge=1, le=100)
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    sources: list[str] | None = None
    scope: list[ScopeBody] | None = Field(default=None, max_length=100)
    chunks: bool = False
    min_score: float | None = Field(default=None, allow_inf_nan=False)


def principals_of(caller: Caller, body: SearchRequest) -> tuple[str | None, list[str]]:
    """Whom to search as: the key's fixed principals, asserted ones, or public only."""
    asserted = body.user is not None or bool(body.groups)
    if caller.fixed_principals:
        if asserted:
            raise HTTPException(
                403,
                f"key {caller.name!r} carries fixed principals; do not send `user` or `groups` "
                "(or give the key assert_principals = true instead).",
            )
        return (caller.users[0] if caller.users else None), list(caller.groups)
    if caller.assert_principals:
        return body.user, list(body.groups)
    if asserted:
        raise HTTPException(
            403,
            f"key {caller.name!r} may not assert `user` or `groups`; it sees public documents "
            "only. Give it principals = {...} or assert_principals = true.",
        )
    return None, []


def sources_of(service_sources: list[str], caller: Caller, body: SearchRequest) -> list[str] | None:
    """The ``sources`` filter; to a non-admin key an unknown id is refused without naming
    the configured sources (an admin is told them, as by the CLI)."""
    if not body.sources:
        return None
    if not caller.has("admin"):
        for source_id in body.sources:
            if source_id not in service_sources:
                raise ConfigError(
                    f"sources: {source_id[:200]!r} is not a source this key can search; "
                    "check the id with the operator, or leave `sources` out to search them all."
                )
    return body.sources


def scopes_of(
    service_sources: list[str], caller: Caller, body: SearchRequest
) -> list[Scope] | None:
    """The ``scope`` filter as scopes; an unknown source is refused as in ``sources``."""
    if body.scope is None:
        return None
    scopes = [Scope.of(entry.source, entry.path) for entry in body.scope]
    if not caller.has("admin"):
        for scope in scopes:
            if scope.source not in service_sources:
                raise ConfigError(
                    f"scope: source {scope.source[:200]!r} is not a source this key can "
                    "search; check the id with the operator."
                )
    return scopes


@router.post("/v1/search", tags=["search"], response_model=SearchBody)
async def search(
    body: SearchRequest, request: Request, caller: Annotated[Caller, Depends(require("search"))]
) -> Json:
    """Search as a user; the same ``{"results": [...]}`` as ``headwater search --json``."""
    service = service_of(request)
    user, groups = principals_of(caller, body)
    configured = [s.id for s in service.ws.config.source]
    sources = sources_of(configured, caller, body)
    scopes = scopes_of(configured, caller, body)
    started = time.perf_counter()
    results = await request.app.state.search_pool.run(
        service.ws.search,
        body.query,
        user=user,
        groups=groups,
        k=body.k,
        mode=body.mode,
        sources=sources,
        per_document=not body.chunks,
        min_score=body.min_score,
        scopes=scopes,
    )
    seconds = time.perf_counter() - started
    request.app.state.metrics.search_latency.labels(body.mode).observe(seconds)
    request.app.state.sampler.searched(seconds)
    return {"results": [r.as_dict() for r in results]}


@router.get(
    "/v1/status", tags=["status"], response_model=StatusBody, response_model_exclude_unset=True
)
async def status(request: Request, _c: Annotated[Caller, Depends(require("admin"))]) -> Json:
    """``headwater status --json``."""
    ws = service_of(request).ws
    return await run_in_threadpool(lambda: ws.status().as_dict())


@router.get(
    "/v1/sources", tags=["sources"], response_model=SourcesBody, response_model_exclude_unset=True
)
async def sources(request: Request, _c: Annotated[Caller, Depends(require("admin"))]) -> Json:
    """Every configured source with its documents, last run and schedule."""
    report = await run_in_threadpool(service_of(request).ws.status)
    return {"sources": report["sources"]}


@router.post(
    "/v1/sources/{source_id}/sync", status_code=202, tags=["sources"], response_model=JobBody
)
async def sync(
    source_id: str, request: Request, _c: Annotated[Caller, Depends(require("admin"))]
) -> Json:
    """Start a sync of one source in the background; answers its job and run id."""
    job = await run_in_threadpool(service_of(request).start_sync, source_id)
    if job is None:
        raise HTTPException(409, f"a sync of {source_id!r} is already running; wait for it.")
    return job.as_dict()


@router.get("/v1/jobs/{job_id}", tags=["sources"], response_model=JobBody)
async def job(
    job_id: str, request: Request, _c: Annotated[Caller, Depends(require("admin"))]
) -> Json:
    """A sync job started by ``POST /v1/sources/{id}/sync``."""
    found = service_of(request).jobs.get(job_id)
    if found is None:
        raise NotFoundError(f"no job {job_id!r} in this process; jobs are kept until restart.")
    return found.as_dict()


def _switch(request: Request, source_id: str, paused: bool) -> Json:
    ws = service_of(request).ws
    ws.source_section(source_id)
    changed = ScheduleStore(ws.manifest.engine).set_paused(source_id, paused, lease_owner())
    return {"source": source_id, "paused": paused, "changed": changed}


@router.post("/v1/sources/{source_id}/pause", tags=["sources"], response_model=PauseBody)
async def pause(
    source_id: str, request: Request, _c: Annotated[Caller, Depends(require("admin"))]
) -> Json:
    """``headwater source pause --json``."""
    return await run_in_threadpool(_switch, request, source_id, True)


@router.post("/v1/sources/{source_id}/resume", tags=["sources"], response_model=PauseBody)
async def resume(
    source_id: str, request: Request, _c: Annotated[Caller, Depends(require("admin"))]
) -> Json:
    """``headwater source resume --json``."""
    return await run_in_threadpool(_switch, request, source_id, False)


@router.get("/v1/runs", tags=["runs"], response_model=RunsBody)
async def runs(
    request: Request,
    _c: Annotated[Caller, Depends(require("admin"))],
    source: str | None = None,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
) -> Json:
    """``headwater runs --json``, newest first."""
    ws = service_of(request).ws
    if source is not None:
        ws.source_section(source)
    rows = await run_in_threadpool(
        ScheduleStore(ws.manifest.engine).list_runs, source, status, limit
    )
    return {"runs": rows}


@router.get("/v1/runs/{run_id}", tags=["runs"], response_model=RunRow)
async def run(
    run_id: str, request: Request, _c: Annotated[Caller, Depends(require("admin"))]
) -> Json:
    """``headwater runs show RUN_ID --json``."""
    row = ScheduleStore(service_of(request).ws.manifest.engine).get_run(run_id)
    if row is None:
        raise NotFoundError(f"no run {run_id!r}; list run ids with GET /v1/runs.")
    return row


@router.get("/v1/indexes", tags=["status"], response_model=IndexesBody)
async def indexes(request: Request, _c: Annotated[Caller, Depends(require("admin"))]) -> Json:
    """Each configured index: type, index version and pending documents."""
    report = await run_in_threadpool(service_of(request).ws.status)
    return {"indexes": report["indexes"]}


@router.get("/healthz", tags=["health"], response_model=HealthBody)
async def healthz() -> Json:
    """The process is up."""
    return {"status": "ok"}


def _ready(request: Request) -> tuple[bool, Json]:
    ws = service_of(request).ws
    checks: Json = {}
    try:
        with ws.manifest.engine.connect() as conn:
            conn.execute(text("select 1"))
        checks["manifest"] = "ok"
    except Exception as exc:
        checks["manifest"] = f"unreachable: {type(exc).__name__}"
    for section in ws.index_sections:
        try:
            ws.sink(section.name)
            checks[f"index:{section.name}"] = "ok"
        except Exception as exc:
            checks[f"index:{section.name}"] = f"not open: {type(exc).__name__}"
    return all(v == "ok" for v in checks.values()), checks


@router.get(
    "/readyz",
    tags=["health"],
    response_model=ReadyBody,
    responses={503: {"model": ReadyBody, "description": "Not ready: `error` names why."}},
)
async def readyz(request: Request) -> JSONResponse:
    """The manifest answers and every index is open (503 otherwise)."""
    ok, checks = await run_in_threadpool(_ready, request)
    body: Json = {"status": "ready" if ok else "not ready", "checks": checks}
    if not ok:
        body["error"] = "not ready: " + ", ".join(
            f"{k} {v}" for k, v in checks.items() if v != "ok"
        )
    return JSONResponse(body, status_code=200 if ok else 503)
