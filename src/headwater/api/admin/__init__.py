"""The admin page at ``/admin``: server-rendered Jinja2, a little vanilla JS, no CDN.

Sign in with an admin key; the server keeps a random session id in memory and sets it
as an HttpOnly, SameSite=Strict cookie. Every form carries the session's CSRF token.
Pages: overview and run details (``console``), one source, failures by cause (each
group with its fix, redrive and drop), dead letters, indexes and their generations with
the rebuild actions (``generations``), charts drawn as SVG on the server (``charts``)
and a search tester that shows, for each hit, which of the caller's principals made it
visible (the manifest ACL ∩ caller). Plumbing (sessions, CSRF) is ``session``.
"""

from __future__ import annotations

import hmac
import secrets
import time
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Form, HTTPException, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from headwater.api.admin import charts, console, generations
from headwater.api.admin.session import (
    COOKIE,
    LOGIN_COOKIE,
    SESSION_SECONDS,
    SESSIONS,
    Posted,
    Session,
    Signed,
    install,
    mount_static,
    page,
    router,
    signed_in,
    templates,
)
from headwater.api.auth import LOCAL_ADMIN, KeyRing
from headwater.api.deps import service_of
from headwater.errors import HeadwaterError
from headwater.manifest.failure_groups import GroupKey
from headwater.manifest.failures import DEAD
from headwater.manifest.runs import lease_owner
from headwater.manifest.schedule import ScheduleStore
from headwater.reports import failure_dict
from headwater.types import caller_principals

__all__ = [
    "charts",
    "console",
    "generations",
    "install",
    "mount_static",
    "router",
    "signed_in",
    "templates",
]


@router.get("/admin/login", response_class=HTMLResponse)
async def login_form(request: Request, error: str | None = None) -> Response:
    token = secrets.token_urlsafe(24)
    response = page(request, "login.html", None, login_csrf=token, error=error)
    response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", path="/admin")
    return response


@router.post("/admin/login")
async def login(
    request: Request, key: Annotated[str, Form()] = "", csrf: Annotated[str, Form()] = ""
) -> Response:
    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not expected or not hmac.compare_digest(csrf.encode(), expected.encode()):
        return RedirectResponse("/admin/login?error=expired", status_code=303)
    ring: KeyRing = request.app.state.keys
    caller = LOCAL_ADMIN if ring.open else ring.identify(key)
    if caller is None or not caller.has("admin"):  # the API's own role check
        return RedirectResponse("/admin/login?error=key", status_code=303)
    sid = secrets.token_urlsafe(32)
    SESSIONS[sid] = Session(caller.name, secrets.token_urlsafe(24), time.time() + SESSION_SECONDS)
    response = RedirectResponse("/admin", status_code=303)
    response.set_cookie(
        COOKIE, sid, httponly=True, samesite="strict", path="/", max_age=SESSION_SECONDS
    )
    response.delete_cookie(LOGIN_COOKIE, path="/admin")
    return response


@router.post("/admin/logout")
async def logout(request: Request, sess: Posted) -> Response:
    SESSIONS.pop(request.cookies.get(COOKIE, ""), None)
    response = RedirectResponse("/admin/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


@router.get("/admin/sources/{source_id}", response_class=HTMLResponse)
async def source(
    request: Request,
    source_id: str,
    sess: Signed,
    flash: str | None = None,
    run: str | None = None,
) -> Response:
    ws = service_of(request).ws
    section = ws.source_section(source_id)
    store = ScheduleStore(ws.manifest.engine)
    runs = await run_in_threadpool(store.list_runs, source_id, None, 50)
    fails = [failure_dict(f) for f in ws.failures(source_id)]
    paused = source_id in store.paused()
    return page(
        request,
        "source.html",
        sess,
        source=section,
        runs=runs,
        failures=fails,
        paused=paused,
        flash=None if run else flash,  # the page says it with a link to the run
        run=run,
    )


@router.post("/admin/sources/{source_id}/sync")
async def source_sync(request: Request, source_id: str, sess: Posted) -> Response:
    job = await run_in_threadpool(service_of(request).start_sync, source_id)
    if job is None:
        query = {"flash": "a sync is already running"}
    else:
        query = {"flash": f"sync started (run {job.run_id})", "run": job.run_id or ""}
    return RedirectResponse(f"/admin/sources/{source_id}?{urlencode(query)}", status_code=303)


@router.post("/admin/sources/{source_id}/{action}")
async def source_switch(request: Request, source_id: str, action: str, sess: Posted) -> Response:
    if action not in ("pause", "resume"):
        raise HTTPException(404, f"no action {action!r}; expected pause or resume.")
    ws = service_of(request).ws
    ws.source_section(source_id)
    ScheduleStore(ws.manifest.engine).set_paused(source_id, action == "pause", lease_owner())
    return RedirectResponse(f"/admin/sources/{source_id}?flash={action}d", status_code=303)


@router.get("/admin/dlq", response_class=HTMLResponse)
async def dlq(
    request: Request,
    sess: Signed,
    stage: str | None = None,
    source: str | None = None,
    show: int | None = None,
    flash: str | None = None,
) -> Response:
    ws = service_of(request).ws
    rows = ws.manifest.failures.list(
        source_id=source or None, stage=stage or None, statuses=(DEAD,)
    )
    entries = [{**failure_dict(f), "run_id": f.run_id} for f in rows]
    shown = next((e for e in entries if e["id"] == show), None)
    return page(
        request,
        "dlq.html",
        sess,
        entries=entries,
        stage=stage or "",
        source=source or "",
        shown=shown,
        flash=flash,
        sources=[s.id for s in ws.config.source],
    )


@router.post("/admin/dlq/{entry_id}/{action}")
async def dlq_action(
    request: Request,
    entry_id: Annotated[int, Path(ge=0, le=2**62)],  # the manifest's integer range
    action: str,
    sess: Posted,
) -> Response:
    service = service_of(request)
    if action == "redrive":

        def work() -> dict[str, Any]:
            with service.index_lock:
                return service.ws.redrive([entry_id]).as_dict()

        try:
            report = await run_in_threadpool(work)
            flash = (
                f"redriven {report['redriven']}: {report['resolved']} resolved, "
                f"{report['still_failing']} still failing"
            )
        except HeadwaterError as exc:  # e.g. a pushed document's entry: say why, on the page
            flash = str(exc)
    elif action == "drop":
        flash = f"dropped {service.ws.manifest.failures.drop([entry_id])} entry"
    else:
        raise HTTPException(404, f"no action {action!r}; expected redrive or drop.")
    return RedirectResponse(f"/admin/dlq?{urlencode({'flash': flash})}", status_code=303)


@router.get("/admin/failures", response_class=HTMLResponse)
async def failures_by_cause(
    request: Request, sess: Signed, source: str | None = None, flash: str | None = None
) -> Response:
    ws = service_of(request).ws
    report = await run_in_threadpool(ws.failure_summary, source or None)
    return page(
        request,
        "failures.html",
        sess,
        groups=report.groups,
        total=report.total,
        source=source or "",
        sources=[s.id for s in ws.config.source],
        flash=flash,
    )


@router.post("/admin/failures/{action}")
async def failures_action(
    request: Request,
    action: str,
    sess: Posted,
    source: Annotated[str, Form()],
    stage: Annotated[str, Form()],
    error_class: Annotated[str, Form()],
    extension: Annotated[str | None, Form()] = None,
    back: Annotated[str, Form()] = "",
) -> Response:
    """Redrive a group's dead-lettered entries, or drop every open entry of it."""
    if action not in ("redrive", "drop"):
        raise HTTPException(404, f"no action {action!r}; expected redrive or drop.")
    # The form writes "." for "no extension" (an empty field would read as absent).
    key = GroupKey(source, stage, error_class, "" if extension == "." else extension)
    service = service_of(request)
    ledger = service.ws.manifest.failures
    name = f"{source} {stage} {key.label()}"
    if action == "drop":
        dropped = await run_in_threadpool(
            lambda: service.ws.drop_failures(ledger.group_entries(key))
        )
        flash = f"dropped {dropped} entries of {name}"
    else:
        dead = await run_in_threadpool(ledger.group_entries, key, (DEAD,))

        def work() -> dict[str, Any]:
            with service.index_lock:
                return service.ws.redrive(dead).as_dict()

        if not dead:
            flash = (
                f"{name} has no dead-lettered entries; its retrying ones are tried again "
                "by the next sync"
            )
        else:
            try:
                report = await run_in_threadpool(work)
                flash = (
                    f"{name}: redriven {report['redriven']}: {report['resolved']} "
                    f"resolved, {report['still_failing']} still failing"
                )
            except HeadwaterError as exc:  # e.g. a push source's entries: say why
                flash = str(exc)
    query = {"flash": flash, **({"source": back} if back else {})}
    return RedirectResponse(f"/admin/failures?{urlencode(query)}", status_code=303)


def visible_by(ws: Any, results: list[dict[str, Any]], user: str | None, groups: list[str]) -> None:
    """Add to each hit the caller's principals that its manifest ACL grants."""
    mine = set(caller_principals(user, groups))
    records = ws.manifest.documents_by_ids([r["document_id"] for r in results])
    for r in results:
        record = records.get(r["document_id"])
        r["visible_by"] = sorted(mine & set(record.acl)) if record is not None else []


@router.get("/admin/search", response_class=HTMLResponse)
async def search(
    request: Request,
    sess: Signed,
    q: str = "",
    user: str = "",
    groups: str = "",
    mode: str = "hybrid",
) -> Response:
    ws = service_of(request).ws
    group_list = [g.strip() for g in groups.split(",") if g.strip()]
    results: list[dict[str, Any]] = []
    error = None
    if q.strip():
        try:
            hits = await request.app.state.search_pool.run(
                ws.search, q, user=user or None, groups=group_list, k=10, mode=mode
            )
            results = [h.as_dict() for h in hits]
            visible_by(ws, results, user or None, group_list)
        except HeadwaterError as exc:
            error = str(exc)
    return page(
        request,
        "search.html",
        sess,
        q=q,
        user=user,
        groups=groups,
        mode=mode,
        results=results,
        error=error,
    )
