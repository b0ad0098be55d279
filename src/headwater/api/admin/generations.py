"""The Indexes page: every index with its generations, rebuild progress and actions.

Rows come from the manifest's generation records (``Workspace.rebuild_status``), so the
page shows what is live now, not what this process loaded at start. A generation being
built shows documents done of total; its rate and ETA come from the previous look at the
page (kept in memory per process; the first look has none). The actions (switch,
rollback, cancel, retire) are the ``Workspace.rebuild_*`` methods, run under the server's
index lock and refused while a rebuild job runs here, as ``/v1/rebuilds`` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from headwater.api.admin.session import Posted, Signed, page, router
from headwater.api.deps import service_of
from headwater.api.service import Service
from headwater.errors import ConfigError, HeadwaterError
from headwater.jsonview import JsonView
from headwater.manifest.generations import IN_PROGRESS
from headwater.rebuilds.results import GenerationRow

ACTIONS = ("switch", "rollback", "cancel", "retire")

_seen: dict[tuple[str, int], tuple[float, int]] = {}  # (index, generation): (time, documents)


def progress(index: str, row: GenerationRow, now: float) -> dict[str, Any]:
    """Done/total, and the rate and ETA since the previous sample of this generation."""
    done, total = row.documents, row.documents_total
    out: dict[str, Any] = {"done": done, "total": total, "rate": None, "eta_s": None}
    out["percent"] = round(100 * done / total) if total else 100
    before = _seen.get((index, row.generation))
    _seen[(index, row.generation)] = (now, done)
    if before is not None and now > before[0] and done > before[1]:
        rate = (done - before[1]) / (now - before[0])
        out["rate"] = rate
        out["eta_s"] = (total - done) / rate if rate > 0 else None
    return out


def indexes_context(service: Service) -> dict[str, Any]:
    status = service.ws.rebuild_status()
    now = time.monotonic()
    indexes = []
    for index in status.indexes:
        rows = []
        for g in reversed(index.generations):  # newest first
            rows.append(
                {
                    "row": g,
                    "progress": progress(index.name, g, now) if g.state in IN_PROGRESS else None,
                }
            )
        section = service.ws.index_section(index.name)
        indexes.append({"name": index.name, "type": section.type, "live": index.live, "rows": rows})
    job = service.rebuilding()
    return {"indexes": indexes, "job": job.as_dict() if job is not None else None}


@router.get("/admin/indexes", response_class=HTMLResponse)
async def indexes(request: Request, sess: Signed, flash: str | None = None) -> Response:
    context = await run_in_threadpool(indexes_context, service_of(request))
    return page(request, "indexes.html", sess, flash=flash, **context)


def outcome(action: str, result: JsonView) -> str:
    """The flash line of a finished action."""
    data = result.as_dict()
    if action == "switch":
        if data["result"] == "switched":
            return f"{data['index']}: generation {data['generation']} is live now"
        problems = "; ".join(data.get("problems", []))
        return f"{data['index']}: generation {data['generation']} {data['result']}: {problems}"
    if action == "rollback":
        if data.get("result") == "stopped":
            return f"{data['index']}: rollback stopped; generation {data['live']} stays live"
        return (
            f"{data['index']}: generation {data['live']} is live again "
            f"({data['pending']} documents pending)"
        )
    if action == "cancel":
        return f"{data['index']}: generation {data['cancelled']} cancelled and dropped"
    retired = ", ".join(str(g) for g in data["retired"]) or "none"
    return f"{data['index']}: retired generations {retired}"


@router.post("/admin/indexes/{name}/{action}")
async def index_action(request: Request, name: str, action: str, sess: Posted) -> Response:
    """Switch, roll back, cancel or retire; the outcome (or why not) is the flash line."""
    if action not in ACTIONS:
        raise HTTPException(404, f"no action {action!r}; expected one of {', '.join(ACTIONS)}.")
    service = service_of(request)
    ws = service.ws
    job = service.rebuilding()
    if job is not None:
        flash = (
            f"a rebuild is running in this server (job {job.job_id}); wait for it before a {action}"
        )
    else:
        methods: dict[str, Callable[[str], JsonView]] = {
            "switch": ws.rebuild_switch,
            "rollback": ws.rebuild_rollback,
            "cancel": ws.rebuild_cancel,
            "retire": ws.rebuild_retire,
        }

        def work() -> JsonView:
            with service.index_lock:
                return methods[action](name)

        try:
            flash = outcome(action, await run_in_threadpool(work))
        except (ConfigError, HeadwaterError) as exc:  # not in the state the action needs
            flash = f"{action} of {name} refused: {exc}"
    return RedirectResponse(f"/admin/indexes?{urlencode({'flash': flash})}", status_code=303)
