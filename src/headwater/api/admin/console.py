"""The overview, a run's detail page and a document's page: what happened and why.

The overview answers per source: how did the last run end, when, in how long, with what
counts; when did it last succeed; why did the last failed run fail (one line); when is it
due next, said only when a scheduler's heartbeat shows one alive (a push source shows
its last push instead, as nothing schedules it). Every run id links to
``/admin/runs/{run_id}``: its window, counts, time per phase, the error with its class and what
to do about it, this run's failure records and the documents it changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import desc, func, select

from headwater.api.admin.session import Signed, page, router
from headwater.api.deps import service_of
from headwater.clock import as_utc, iso, utcnow
from headwater.errors import (
    ConfigError,
    FatalError,
    HeadwaterError,
    NotFoundError,
    TransientError,
)
from headwater.manifest import schema as t
from headwater.manifest.liveness import SCHEDULER, Beat
from headwater.manifest.runs import FAILED
from headwater.manifest.schedule import ScheduleStore
from headwater.reports import failure_dict
from headwater.sync.phases import PHASE_LABELS
from headwater.workspace import Workspace

DOCUMENTS_SHOWN = 50

# What to do about a failed run, by the family of its error class.
ADVICE: tuple[tuple[type[BaseException], str], ...] = (
    (
        ConfigError,
        "A configuration problem: fix the key the message names in headwater.toml "
        "(or the credential it references), then press Sync now on the source's page.",
    ),
    (
        TransientError,
        "The source or a server was unreachable or busy: the scheduler retries with "
        "backoff; once it is reachable again, Sync now runs at once.",
    ),
    (
        FatalError,
        "The run could not go on (its lease was lost, the source was busy elsewhere, or "
        "content went missing): the next run resumes from the last checkpoint; if it "
        "repeats, read the message and the server log of this run.",
    ),
)
UNKNOWN_ADVICE = (
    "An unexpected error (a bug, or a failure Headwater does not classify): the next run "
    "tries again; report it with this message and the log lines of this run."
)


def error_class(error: str | None) -> str | None:
    """The class name of a run's recorded error (``"ClassName: message"``)."""
    if not error:
        return None
    head = error.split(":", 1)[0].strip()
    return head if head.isidentifier() else None


def advice(error: str | None) -> str | None:
    """What to do about a run that ended with ``error``."""
    name = error_class(error)
    if error is None:
        return None
    for family, text in ADVICE:
        pending: list[type[BaseException]] = [family]
        while pending:
            cls = pending.pop()
            if cls.__name__ == name:
                return text
            pending.extend(cls.__subclasses__())
    return UNKNOWN_ADVICE


def one_line(text: str | None, limit: int = 200) -> str:
    """``text`` on one line, cut at ``limit`` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Liveness:
    """The liveness line: schedulers and workers with a fresh heartbeat."""

    schedulers: list[Beat]
    workers: list[Beat]


def liveness(ws: Workspace) -> Liveness:
    alive = ws.manifest.liveness.alive()
    return Liveness(
        [b for b in alive if b.role == SCHEDULER], [b for b in alive if b.role != SCHEDULER]
    )


def last_push(ws: Workspace, source_id: str) -> str | None:
    """When a push source's documents last changed (its last push)."""
    d = t.documents.c
    with ws.manifest.engine.connect() as conn:
        moment = conn.execute(
            select(func.max(d.updated_at)).where(d.source_id == source_id)
        ).scalar()
    return iso(moment) if moment is not None else None


def source_rows(ws: Workspace, scheduler_alive: bool) -> list[dict[str, Any]]:
    """One overview row per configured source."""
    report = ws.status()
    store = ScheduleStore(ws.manifest.engine)
    rows = []
    for s in report.sources:
        if not s.configured:
            continue
        last = store.list_runs(s.id, None, 1)
        failed = store.list_runs(s.id, FAILED, 1)
        ok = ws.manifest.runs.last_successful(s.id)
        push = s.type == "push"
        schedule = s.schedule
        rows.append(
            {
                "id": s.id,
                "type": s.type,
                "state": "paused"
                if schedule and schedule.paused
                else ("backoff" if schedule and schedule.backoff_until else "active"),
                "last": last[0] if last else None,
                "last_success": iso(ok.finished_at) if ok is not None else None,
                "last_failure": failed[0] if failed else None,
                "last_failure_error": one_line(failed[0]["error"]) if failed else None,
                "push": push,
                "last_push": last_push(ws, s.id) if push else None,
                "next_due": schedule.next_due_at
                if schedule and scheduler_alive and not push
                else None,
                "documents": s.documents,
                "failures_open": s.failures_open,
            }
        )
    return rows


def overview_context(ws: Workspace) -> dict[str, Any]:
    alive = liveness(ws)
    report = ws.status()
    return {
        "rows": source_rows(ws, bool(alive.schedulers)),
        "alive": alive,
        "now": utcnow(),
        "dlq": report.dlq,
        "indexes": report.indexes,
    }


def ago(moment: str | datetime | None) -> str:
    """``moment`` as "3 min ago" (the page also shows the exact time on hover)."""
    if moment is None:
        return ""
    when = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    seconds = (utcnow() - as_utc(when)).total_seconds()
    future = seconds < 0
    seconds = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            text = f"{int(seconds // size)} {unit}"
            break
    else:
        text = f"{int(seconds)} s"
    return f"in {text}" if future else f"{text} ago"


@router.get("/admin", response_class=HTMLResponse)
async def overview(request: Request, sess: Signed) -> Response:
    ws = service_of(request).ws
    context = await run_in_threadpool(overview_context, ws)
    return page(request, "overview.html", sess, ago=ago, **context)


def run_context(ws: Workspace, run_id: str) -> dict[str, Any]:
    try:
        run = ScheduleStore(ws.manifest.engine).get_run(run_id)
    except ConfigError as exc:  # an ambiguous prefix: say which runs it matches
        raise HTTPException(409, str(exc)) from exc
    if run is None:
        raise HTTPException(404, f"no run {run_id!r}; run ids are listed on each source's page.")
    f = t.failures.c
    d = t.documents.c
    with ws.manifest.engine.connect() as conn:
        entry_ids = [
            r[0] for r in conn.execute(select(f.entry_id).where(f.run_id == run["run_id"]))
        ]
        started = datetime.fromisoformat(run["started_at"])
        changed = conn.execute(
            select(d.document_id, d.title, d.locator, d.state, d.revision)
            .where(
                d.source_id == run["source"],
                d.last_seen_run == run["run_id"],
                d.updated_at >= started,
            )
            .order_by(desc(d.updated_at))
            .limit(DOCUMENTS_SHOWN)
        ).all()
    failures = [failure_dict(x) for x in map(ws.manifest.failures.get, entry_ids) if x]
    return {
        "run": run,
        "error_class": error_class(run["error"]),
        "advice": advice(run["error"]) if run["status"] == FAILED or run["error"] else None,
        "failures": failures,
        "documents": [dict(r._mapping) for r in changed],
        "documents_shown": DOCUMENTS_SHOWN,
        "phase_labels": PHASE_LABELS,
    }


@router.get("/admin/runs/{run_id}", response_class=HTMLResponse)
async def run_detail(request: Request, run_id: str, sess: Signed) -> Response:
    ws = service_of(request).ws
    context = await run_in_threadpool(run_context, ws, run_id)
    return page(request, "run.html", sess, ago=ago, **context)


@router.get("/admin/documents/{document_id}", response_class=HTMLResponse)
async def document(request: Request, document_id: str, sess: Signed) -> Response:
    ws = service_of(request).ws
    try:
        report = await run_in_threadpool(ws.document, document_id)
    except (NotFoundError, HeadwaterError) as exc:
        raise HTTPException(404, str(exc)) from exc
    return page(request, "document.html", sess, doc=report.as_dict())
