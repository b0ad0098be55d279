"""API v1, index generations: ``headwater rebuild`` and its actions (admin role).

``GET /v1/rebuilds`` is ``rebuild status``. ``POST /v1/rebuilds`` is ``rebuild``, run in
the request as the CLI runs it, and answers its report; ``POST /v1/rebuilds/jobs``
starts the same as a background job (202: a rebuild embeds the whole corpus again,
longer than many clients hold a request open) that ``GET /v1/rebuilds/jobs/{job_id}``
follows to its report. Either way it is a job of the Service: one runs at a time per
process (409 otherwise). ``switch``, ``rollback``, ``cancel`` and
``retire`` run in the request, holding the index lock, and answer their command's
``--json``; they are refused (409) while a rebuild job runs in this process, whose
sinks they would change under it (``headwater rebuild cancel`` from another process
stops such a job safely). An unknown index is a 404; an index not in the state an
action needs (no ready generation to switch to, none in progress to cancel, ...) a 409.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool

from headwater.api.auth import Caller, require
from headwater.api.deps import service_of
from headwater.api.rebuild_models import (
    CancelBody,
    RebuildJobBody,
    RebuildReportBody,
    RebuildRequest,
    RebuildStatusBody,
    RetireBody,
    RollbackBody,
    SwitchBody,
)
from headwater.api.service import RebuildJob, Service
from headwater.errors import ConfigError, NotFoundError
from headwater.jsonview import JsonView

UNKNOWN_INDEX = {"description": "The index is not configured."}
WRONG_STATE = {
    "description": "A rebuild runs in this process, or the index's generations are not in "
    "the state the action needs."
}
ERRORS: dict[int | str, dict[str, Any]] = {404: UNKNOWN_INDEX, 409: WRONG_STATE}
router = APIRouter(tags=["rebuilds"])
Json = dict[str, Any]
Admin = Annotated[Caller, Depends(require("admin"))]


def known_index(service: Service, name: str) -> None:
    """An index the config does not name is a 404 (the message lists the configured ones)."""
    try:
        service.ws.index_section(name)
    except ConfigError as exc:
        raise NotFoundError(str(exc)) from exc


def not_while_rebuilding(service: Service, action: str) -> None:
    """The actions never wait for a rebuild job (it holds the index lock for its whole
    run) nor drop storage under it: they are refused meanwhile."""
    job = service.rebuilding()
    if job is not None:
        raise HTTPException(
            409,
            f"a rebuild is running in this server (job {job.job_id}); wait for it (GET "
            f"/v1/rebuilds/jobs/{job.job_id}) before a {action}, or stop it with "
            "`headwater rebuild cancel INDEX` from another process.",
        )


def locked(service: Service, action: Callable[[], JsonView]) -> Json:
    """Run ``action`` on a known index under the index lock: a ConfigError now says the
    index's generations are not in the state it needs (409)."""
    with service.index_lock:
        try:
            return action().as_dict()
        except ConfigError as exc:
            raise HTTPException(409, str(exc)) from exc


async def act(request: Request, name: str, what: str, action: Callable[[], JsonView]) -> Json:
    """A known index, no rebuild job running, then ``action`` in a worker thread."""
    service = service_of(request)
    known_index(service, name)
    not_while_rebuilding(service, what)
    return await run_in_threadpool(locked, service, action)


@router.get("/v1/rebuilds", response_model=RebuildStatusBody)
async def rebuild_status(request: Request, _c: Admin) -> Json:
    """``headwater rebuild status --json``: every index's generations."""
    ws = service_of(request).ws
    return await run_in_threadpool(lambda: ws.rebuild_status().as_dict())


async def start(request: Request, body: RebuildRequest | None) -> RebuildJob:
    """The rebuild job of ``body``'s options, started; 404 for an unknown index, 409 while
    another rebuild job runs in this process."""
    service = service_of(request)
    options = body or RebuildRequest()
    for name in options.indexes or ():
        known_index(service, name)
    job = await run_in_threadpool(
        lambda: service.start_rebuild(options.indexes, force=options.force, switch=options.switch)
    )
    if job is None:
        running = service.rebuilding()
        which = f" (job {running.job_id})" if running is not None else ""
        raise HTTPException(409, f"a rebuild is already running{which}; wait for it.")
    return job


@router.post(
    "/v1/rebuilds",
    response_model=RebuildReportBody,
    response_model_exclude_unset=True,
    responses=ERRORS,
)
async def rebuild(request: Request, _c: Admin, body: RebuildRequest | None = None) -> Json:
    """``headwater rebuild [INDEX ...] [--force] [--no-switch] --json``, run in the request
    (``POST /v1/rebuilds/jobs`` runs it in the background)."""
    job = await start(request, body)
    report = await run_in_threadpool(job.result)
    return report.as_dict()


@router.post(
    "/v1/rebuilds/jobs",
    status_code=202,
    response_model=RebuildJobBody,
    response_model_exclude_unset=True,
    responses=ERRORS,
)
async def rebuild_start(request: Request, _c: Admin, body: RebuildRequest | None = None) -> Json:
    """Start ``headwater rebuild [INDEX ...] [--force] [--no-switch]`` in the background;
    answers the job (follow it with ``GET /v1/rebuilds/jobs/{job_id}``)."""
    return (await start(request, body)).as_dict()


@router.get(
    "/v1/rebuilds/jobs/{job_id}",
    response_model=RebuildJobBody,
    response_model_exclude_unset=True,
    responses={404: {"description": "No such job in this process."}},
)
async def rebuild_job(job_id: str, request: Request, _c: Admin) -> Json:
    """A rebuild started by ``POST /v1/rebuilds``: its status, and its report once done."""
    found = service_of(request).rebuild_jobs.get(job_id)
    if found is None:
        raise NotFoundError(
            f"no rebuild job {job_id!r} in this process; jobs are kept until restart."
        )
    return found.as_dict()


@router.post(
    "/v1/rebuilds/{name}/switch",
    response_model=SwitchBody,
    response_model_exclude_unset=True,
    responses=ERRORS,
)
async def rebuild_switch(name: str, request: Request, _c: Admin) -> Json:
    """``headwater rebuild switch INDEX --json``: catch up, verify again, make it live."""
    ws = service_of(request).ws
    return await act(request, name, "switch", lambda: ws.rebuild_switch(name))


@router.post(
    "/v1/rebuilds/{name}/rollback",
    response_model=RollbackBody,
    response_model_exclude_unset=True,
    responses=ERRORS,
)
async def rebuild_rollback(name: str, request: Request, _c: Admin) -> Json:
    """``headwater rebuild rollback INDEX --json``: the previous generation, caught up."""
    ws = service_of(request).ws
    return await act(request, name, "rollback", lambda: ws.rebuild_rollback(name))


@router.post("/v1/rebuilds/{name}/cancel", response_model=CancelBody, responses=ERRORS)
async def rebuild_cancel(name: str, request: Request, _c: Admin) -> Json:
    """``headwater rebuild cancel INDEX --json``: retire the generation in progress."""
    ws = service_of(request).ws
    return await act(request, name, "cancel", lambda: ws.rebuild_cancel(name))


@router.post("/v1/rebuilds/{name}/retire", response_model=RetireBody, responses=ERRORS)
async def rebuild_retire(name: str, request: Request, _c: Admin) -> Json:
    """``headwater rebuild retire INDEX --json``: drop all but the live and previous ones."""
    ws = service_of(request).ws
    return await act(request, name, "retire", lambda: ws.rebuild_retire(name))
