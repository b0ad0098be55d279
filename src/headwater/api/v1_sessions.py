"""API v1, full-replace push sessions and group push (``ingest`` role, scoped to the source).

``POST /v1/sources/{id}/sessions`` opens a session (one open per source: a second is
409); ``PUT .../sessions/{sid}/documents`` sends a page of documents (pushed as a batch);
``POST .../sessions/{sid}:complete`` deletes the source's documents the session did not
send (409 with the numbers past ``prune_max_fraction`` unless ``{"force": true}``);
``:abort`` deletes nothing. ``PUT``/``DELETE /v1/groups/{source}/{group}`` set or delete
a pushed group's members at a version. The rules are the sync core's
(``sync.sessions``, ``sync.group_push``); this module reads requests and shapes answers.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import Field

from headwater.api.auth import Caller, require, require_source
from headwater.api.deps import service_of
from headwater.api.hygiene import CleanModel
from headwater.api.models import Body, PushBatchBody
from headwater.api.push import MAX_BATCH, PushDocument, upsert_op
from headwater.api.service import Service
from headwater.errors import PushConflict
from headwater.manifest.pushed_groups import GroupPushResult
from headwater.sync.sessions import PushSessions, session_dict

router = APIRouter(tags=["push"])
Json = dict[str, Any]
Ingest = Annotated[Caller, Depends(require("ingest"))]
SESSION = "/v1/sources/{source_id}/sessions"


class SessionDocument(PushDocument):
    """One document of a session page: an object id and the fields of a push."""

    object_id: str = Field(min_length=1, max_length=2000)


class SessionPage(CleanModel):
    """The body of ``PUT .../sessions/{sid}/documents``: 1 to 500 documents."""

    documents: list[SessionDocument] = Field(min_length=1, max_length=MAX_BATCH)


class CompleteRequest(CleanModel):
    """The body of ``:complete``: ``force`` deletes past ``prune_max_fraction``."""

    force: bool = False


class GroupRequest(CleanModel):
    """The body of ``PUT /v1/groups/{source}/{group}``: the members (and the pushed
    groups of the same source nested in it) at ``version``."""

    version: int = Field(ge=0, le=2**62)
    members: list[str] = Field(max_length=100_000)
    groups: list[str] = Field(
        default=[],
        max_length=10_000,
        description="Names of pushed groups of the same source whose members are members "
        "of this one, transitively (cycles are fine).",
    )


class SessionBody(Body):
    """A push session: its state, times (ISO 8601, UTC) and counts."""

    session_id: str
    source: str
    state: str = Field(description="open, completing, completed, aborted or expired")
    opened_at: str
    touched_at: str
    expires_at: str | None = Field(description="When it expires if idle; None once closed.")
    closed_at: str | None
    sent: int = Field(description="Distinct object ids sent in the session.")
    deleted: int = Field(description="Documents its complete deleted.")


class CompleteBody(Body):
    """What ``:complete`` did (the same keys in its 409 when blocked, with ``error``)."""

    session_id: str
    status: str = Field(description="completed, or blocked (in the 409)")
    candidates: int = Field(description="Active documents the session did not send.")
    active: int
    fraction: float
    max_fraction: float
    deleted: int


class GroupBody(Body):
    """What a group push did: new, changed, unchanged or deleted (stale is a 409)."""

    source: str
    group: str
    principal: str = Field(description="The principal ACLs name: SOURCE:group:NAME.")
    version: int
    status: str
    members: int
    groups: int = Field(description="How many subgroups the group holds directly.")


def _sessions(request: Request, caller: Caller, source_id: str) -> PushSessions:
    require_source(caller, source_id)
    service: Service = service_of(request)
    return service.ws.push_sessions(source_id)


@router.post(SESSION, response_model=SessionBody, status_code=201)
async def open_session(source_id: str, request: Request, caller: Ingest) -> Json:
    """Open a full-replace session of a push source (409 while another one is open)."""
    sessions = _sessions(request, caller, source_id)
    record = await run_in_threadpool(sessions.open)
    return session_dict(record, sessions.idle)


@router.get(SESSION + "/{session_id}", response_model=SessionBody)
async def get_session(source_id: str, session_id: str, request: Request, caller: Ingest) -> Json:
    """The session's state and counts."""
    sessions = _sessions(request, caller, source_id)
    return session_dict(await run_in_threadpool(sessions.get, session_id), sessions.idle)


@router.put(
    SESSION + "/{session_id}/documents",
    response_model=PushBatchBody,
    response_model_exclude_unset=True,
)
async def send_page(
    source_id: str, session_id: str, body: SessionPage, request: Request, caller: Ingest
) -> Json:
    """Push a page of the session's documents; one result per document, as a batch."""
    sessions = _sessions(request, caller, source_id)
    ops = [upsert_op(source_id, doc.object_id, doc) for doc in body.documents]
    results = [r.as_dict() for r in await run_in_threadpool(sessions.send, session_id, ops)]
    if any(r["status"] in ("new", "changed") for r in results):
        service_of(request).drain_soon()
    return {"results": results}


@router.post(
    SESSION + "/{session_id}:complete",
    response_model=CompleteBody,
    responses={409: {"description": "Blocked by prune_max_fraction, or not open."}},
)
async def complete_session(
    source_id: str,
    session_id: str,
    request: Request,
    caller: Ingest,
    body: CompleteRequest | None = None,
) -> Any:
    """Delete the source's documents the session did not send, and end it."""
    sessions = _sessions(request, caller, source_id)
    force = body.force if body is not None else False
    report = await run_in_threadpool(lambda: sessions.complete(session_id, force=force))
    answer = report.as_dict()
    if report.status == "blocked":
        answer["error"] = (
            f"completing session {session_id!r} would delete {report.candidates} of "
            f"{report.active} documents of {source_id!r} ({report.fraction:.0%}), more than "
            f"prune_max_fraction ({report.max_fraction:.0%}); nothing was deleted and the "
            'session is still open: send the missing documents, or complete with {"force": '
            "true} if they are really gone"
        )
        return JSONResponse(answer, status_code=409)
    if report.deleted:
        service_of(request).drain_soon()
    return answer


@router.post(SESSION + "/{session_id}:abort", response_model=SessionBody)
async def abort_session(source_id: str, session_id: str, request: Request, caller: Ingest) -> Json:
    """End the session without deleting anything."""
    sessions = _sessions(request, caller, source_id)
    return session_dict(await run_in_threadpool(sessions.abort, session_id), sessions.idle)


def _group_answer(result: GroupPushResult) -> Json:
    if result.status == "stale":
        current = result.current_version
        relation = "is not newer than" if result.version == current else "is older than"
        raise PushConflict(
            f"group {result.name!r} version {result.version} {relation} the current version "
            f"{current}; send a version above it.",
            current,
        )
    return result.as_dict()


@router.put("/v1/groups/{source_id}/{group}", response_model=GroupBody)
async def put_group(
    source_id: str, group: str, body: GroupRequest, request: Request, caller: Ingest
) -> Json:
    """Set a pushed group's members at ``version`` (older: 409; a replay: unchanged)."""
    require_source(caller, source_id)
    ws = service_of(request).ws
    result = await run_in_threadpool(
        ws.push_group, source_id, group, body.members, body.version, body.groups
    )
    return _group_answer(result)


@router.delete("/v1/groups/{source_id}/{group}", response_model=GroupBody)
async def delete_group(
    source_id: str,
    group: str,
    request: Request,
    caller: Ingest,
    version: Annotated[int, Query(ge=0, le=2**62)],
) -> Json:
    """Delete a pushed group at ``version``: an older membership arriving late is refused."""
    require_source(caller, source_id)
    ws = service_of(request).ws
    result = await run_in_threadpool(ws.push_group, source_id, group, None, version)
    return _group_answer(result)
