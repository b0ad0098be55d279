"""API v1, push ingestion: PUT / DELETE one document, or a batch of up to 500.

Only for ``push`` sources and the ``ingest`` role, and an ingest key only for the sources
its ``sources = [...]`` names (403 otherwise). A 2xx means the manifest committed the
change; indexing follows in the background (see ``headwater.sync.push``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool

from headwater.api.auth import Caller, require, require_source
from headwater.api.deps import service_of
from headwater.api.models import PushBatchBody, PushResultBody
from headwater.api.push import (
    BatchRequest,
    PushDocument,
    PushOp,
    apply_ops,
    delete_op,
    single,
    upsert_op,
)

router = APIRouter(tags=["push"])
Json = dict[str, Any]
Ingest = Annotated[Caller, Depends(require("ingest"))]


@router.post(
    "/v1/sources/{source_id}/documents:batch",
    response_model=PushBatchBody,
    response_model_exclude_unset=True,
)
async def push_batch(source_id: str, body: BatchRequest, request: Request, caller: Ingest) -> Json:
    """Apply up to 500 upserts and deletes in order; one result per operation.

    A stale or unreadable operation is reported in its result (``stale`` with
    ``current_version``, ``failed`` with ``error``) and does not stop the others.
    """
    require_source(caller, source_id)
    ops: list[PushOp] = []
    for item in body.operations:
        if item.op == "delete":
            ops.append(delete_op(item.object_id, item.version))
        else:
            ops.append(upsert_op(source_id, item.object_id, item))
    results = await run_in_threadpool(apply_ops, service_of(request), source_id, ops)
    return {"results": results}


@router.put(
    "/v1/sources/{source_id}/documents/{object_id:path}",
    response_model=PushResultBody,
    response_model_exclude_unset=True,
)
async def push_document(
    source_id: str, object_id: str, body: PushDocument, request: Request, caller: Ingest
) -> Json:
    """Create or replace one document at ``version`` (a replay is ``unchanged``; older: 409)."""
    require_source(caller, source_id)
    op = upsert_op(source_id, object_id, body)
    results = await run_in_threadpool(apply_ops, service_of(request), source_id, [op])
    return single(results, f"document {object_id!r}")


@router.delete(
    "/v1/sources/{source_id}/documents/{object_id:path}",
    response_model=PushResultBody,
    response_model_exclude_unset=True,
)
async def delete_document(
    source_id: str,
    object_id: str,
    request: Request,
    caller: Ingest,
    version: Annotated[int, Query(ge=0, le=2**62)],
) -> Json:
    """Delete one document at ``version`` (held or not): its tombstone refuses older
    upserts arriving late."""
    require_source(caller, source_id)
    op = delete_op(object_id, version)
    results = await run_in_threadpool(apply_ops, service_of(request), source_id, [op])
    return single(results, f"delete of {object_id!r}")
