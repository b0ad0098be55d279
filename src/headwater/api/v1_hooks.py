"""``POST /v1/hooks/{source_id}``: a vendor's webhook, authenticated by its signature.

No API key: the vendor signs (or tokens) each request with the source's
``webhook_secret``, checked in ``headwater.hints.vendors`` before the body is parsed. A
bad or missing signature is 401 and counted in ``headwater_hooks_rejected_total{source,
reason}``; a handshake (Slack's ``url_verification``, Graph's ``validationToken``) is
answered 200 with what the vendor expects; anything else is 202 once its hints are
durable in the manifest's hint queue (``{"queued": N}``; a delivery that names nothing
Headwater reads queues nothing). An unknown source, or one whose type takes no webhooks,
is 404. Graph sends its ``validationToken`` handshake as a POST too, so it is served here.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from headwater.api.deps import service_of
from headwater.api.models import HookBody
from headwater.errors import ConfigError, NotFoundError
from headwater.hints.queue import queue
from headwater.hints.vendors import Verdict, read_webhook

router = APIRouter(tags=["hooks"])


def _verdict(request: Request, source_id: str, body: bytes) -> Verdict:
    ws = service_of(request).ws
    try:
        section = ws.source_section(source_id)
    except ConfigError as exc:
        raise NotFoundError(f"no source {source_id!r} takes webhooks here: {exc}") from exc
    secret = section.webhook_secret.get_secret_value() if section.webhook_secret else None
    verdict = read_webhook(
        section.type,
        secret,
        dict(request.headers),
        dict(request.query_params),
        body,
        time.time(),
    )
    if verdict is None:
        raise NotFoundError(
            f"source {source_id!r} is a {section.type!r} source, which takes no webhooks; "
            "expected one of github, slack, jira, confluence, sharepoint, gdrive. Use "
            "`watch = true` (filesystem) or the periodic scan instead"
        )
    return verdict


def _queue(request: Request, source_id: str, verdict: Verdict, origin: str) -> int:
    rt = service_of(request).ws.runtime
    if verdict.scope:
        return queue(rt, source_id, origin=origin, scope=True)
    if verdict.object_ids:
        return queue(rt, source_id, list(verdict.object_ids), kind=verdict.kind, origin=origin)
    return 0


@router.post("/v1/hooks/{source_id}", status_code=202, response_model=HookBody)
async def webhook(source_id: str, request: Request) -> Response:
    """Take one webhook delivery for ``source_id`` (see the module docstring)."""
    body = await request.body()
    verdict = await run_in_threadpool(_verdict, request, source_id, body)
    origin = service_of(request).ws.source_section(source_id).type
    if verdict.status == 401:
        request.app.state.metrics.hooks_rejected.labels(source_id, verdict.reason).inc()
        message = (
            f"webhook for source {source_id!r} refused ({verdict.reason}): expected the "
            f"{origin} signature made with the source's `webhook_secret`; check that the "
            "secret configured at the vendor matches it"
        )
        return JSONResponse({"error": message}, status_code=401)
    if verdict.status == 200:
        if verdict.media_type == "text/plain":
            return PlainTextResponse(str(verdict.reply))
        reply: Any = verdict.reply
        return JSONResponse(reply)
    queued = await run_in_threadpool(_queue, request, source_id, verdict, origin)
    return JSONResponse({"queued": queued}, status_code=202)
