"""API v1, admin reads and repairs: documents, failures, the DLQ, reconcile, metrics.

Every endpoint needs the ``admin`` role (documents are the corpus itself); ``/metrics``
is open on a loopback bind and needs an admin key everywhere else.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import Field

from headwater.api.auth import Caller, require
from headwater.api.deps import service_of
from headwater.api.hygiene import CleanModel
from headwater.api.models import (
    DlqBody,
    DocumentBody,
    DroppedBody,
    Failure,
    FailuresBody,
    FailureSummaryBody,
    ReconcileBody,
    RedriveBody,
)
from headwater.errors import ConfigError, NotFoundError
from headwater.manifest.failures import DEAD
from headwater.reports import failure_dict

router = APIRouter()
Json = dict[str, Any]
Admin = Annotated[Caller, Depends(require("admin"))]
EntryId = Annotated[int, Path(ge=0, le=2**62)]  # the manifest's integer range


@router.get("/v1/documents/{document_id}", tags=["documents"], response_model=DocumentBody)
async def document(document_id: str, request: Request, _c: Admin) -> Json:
    """``headwater doc show DOCUMENT_ID --json``."""
    ws = service_of(request).ws
    return await run_in_threadpool(lambda: ws.document(document_id).as_dict())


@router.get("/v1/documents", tags=["documents"], response_model=DocumentBody)
async def document_by_object(
    request: Request, _c: Admin, source: str | None = None, object: str | None = None
) -> Json:
    """``headwater doc show --source S --object O --json``."""
    if not source or object is None:
        raise ConfigError(
            "give both `source` and `object` query parameters (or GET /v1/documents/{id})."
        )
    ws = service_of(request).ws
    return await run_in_threadpool(
        lambda: ws.document(None, source=source, object_id=object).as_dict()
    )


@router.get("/v1/failures", tags=["failures"], response_model=FailuresBody)
async def failures(
    request: Request, _c: Admin, source: str | None = None, stage: str | None = None
) -> Json:
    """``headwater failures --json``: open failure records."""
    rows = await run_in_threadpool(service_of(request).ws.failures, source, stage)
    return {"failures": [failure_dict(f) for f in rows]}


@router.get("/v1/failures/summary", tags=["failures"], response_model=FailureSummaryBody)
async def failures_summary(request: Request, _c: Admin, source: str | None = None) -> Json:
    """``headwater failures --summary --json``: open failures grouped by cause."""
    ws = service_of(request).ws
    if source is not None:
        ws.require_known_source(source)
    report = await run_in_threadpool(ws.failure_summary, source)
    return report.as_dict()


@router.get("/v1/dlq", tags=["dlq"], response_model=DlqBody)
async def dlq(
    request: Request, _c: Admin, source: str | None = None, stage: str | None = None
) -> Json:
    """``headwater dlq list --json``."""
    manifest = service_of(request).ws.manifest
    rows = await run_in_threadpool(
        manifest.failures.list, source_id=source, stage=stage, statuses=(DEAD,)
    )
    return {"entries": [failure_dict(f) for f in rows]}


@router.get("/v1/dlq/{entry_id}", tags=["dlq"], response_model=Failure)
async def dlq_entry(entry_id: EntryId, request: Request, _c: Admin) -> Json:
    """``headwater dlq show ID --json``."""
    entry = service_of(request).ws.manifest.failures.get(entry_id)
    if entry is None:
        raise NotFoundError(f"no DLQ entry #{entry_id}; list them with GET /v1/dlq.")
    return failure_dict(entry)


class RedriveRequest(CleanModel):
    """The body of ``POST /v1/dlq/redrive``."""

    ids: list[Annotated[int, Field(ge=0, le=2**62)]] = Field(default=[], max_length=10_000)
    all: bool = False
    stage: str | None = None


@router.post(
    "/v1/dlq/redrive", tags=["dlq"], response_model=RedriveBody, response_model_exclude_unset=True
)
async def redrive(body: RedriveRequest, request: Request, _c: Admin) -> Json:
    """``headwater dlq redrive --json``: replay entries through the normal pipeline."""
    if not body.ids and not body.all and not body.stage:
        raise ConfigError("name entry `ids`, or set `all` or `stage`.")
    service = service_of(request)

    def work() -> Json:
        with service.index_lock:
            return service.ws.redrive(body.ids, all_entries=body.all, stage=body.stage).as_dict()

    return await run_in_threadpool(work)


@router.delete("/v1/dlq/{entry_id}", tags=["dlq"], response_model=DroppedBody)
async def dlq_drop(entry_id: EntryId, request: Request, _c: Admin) -> Json:
    """``headwater dlq drop ID``: forget the entry (the document stays as it is)."""
    dropped = service_of(request).ws.manifest.failures.drop([entry_id])
    if not dropped:
        raise NotFoundError(f"no DLQ entry #{entry_id}; list them with GET /v1/dlq.")
    return {"dropped": dropped}


class ReconcileRequest(CleanModel):
    """The body of ``POST /v1/reconcile``."""

    sink: str | None = None
    repair: bool = False


@router.post("/v1/reconcile", tags=["maintenance"], response_model=ReconcileBody)
async def reconcile(request: Request, _c: Admin, body: ReconcileRequest | None = None) -> Json:
    """``headwater reconcile --json``; ``repair`` re-applies exactly what differs."""
    service = service_of(request)
    options = body or ReconcileRequest()
    if options.sink is not None:
        service.ws.sink(options.sink)  # an unknown index is a ConfigError (400)

    def work() -> Json:
        with service.index_lock:
            return service.ws.reconcile(options.sink, repair=options.repair).as_dict()

    return await run_in_threadpool(work)


async def metrics_caller(request: Request) -> Caller | None:
    """Open on loopback; an admin key anywhere else."""
    if request.app.state.loopback:
        return None
    return require("admin").check(request)


@router.get("/metrics", tags=["metrics"], response_class=Response)
async def metrics(
    request: Request, _c: Annotated[Caller | None, Depends(metrics_caller)]
) -> Response:
    """Prometheus text exposition (names start with ``headwater_``)."""
    body = await run_in_threadpool(request.app.state.metrics.render)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")
