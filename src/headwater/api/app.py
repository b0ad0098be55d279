"""The FastAPI app factory and the one place errors become JSON.

Every error answers ``{"error": "<one line>"}``: ``HeadwaterError`` subclasses map to a
status (ConfigError 400, NotFoundError 404, others 500 with their message), request
validation to 422, a push version conflict to 409 with the current version.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from headwater.api.auth import KeyRing, is_loopback
from headwater.api.balance import BalanceConnections
from headwater.api.metrics import Metrics, install_http_metrics
from headwater.api.push import PushConflict
from headwater.api.samples import Sampler
from headwater.api.search_pool import SearchPool, threads_for
from headwater.api.service import Service
from headwater.errors import ConfigError, HeadwaterError, NotFoundError
from headwater.units import parse_duration

log = logging.getLogger(__name__)

CONFIG_ENV = "HEADWATER_CONFIG"
HOST_ENV = "HEADWATER_SERVE_HOST"


def status_of(exc: HeadwaterError) -> int:
    """The HTTP status of a HeadwaterError."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConfigError):
        return 400
    return 500


def one_line(text: str) -> str:
    """``text`` on one line."""
    return " ".join(str(text).split())


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for item in exc.errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
        parts.append(f"{where or 'body'}: {item.get('msg', 'invalid')}")
    return one_line("invalid request: " + "; ".join(parts) + ". See /openapi.json.")


def _explained(request: Request, exc: StarletteHTTPException) -> tuple[int, str]:
    """Starlette's and FastAPI's own terse errors, said with what to do instead."""
    where = f"{request.method} {request.url.path}"
    if exc.status_code == 404 and exc.detail == "Not Found":
        return 404, f"no endpoint {where}; the endpoints are listed in /openapi.json."
    if exc.status_code == 405 and exc.detail == "Method Not Allowed":
        return 405, f"{where} is not allowed; the methods of each path are in /openapi.json."
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        # FastAPI's answer to a body json.loads cannot even decode (not UTF-8 text).
        return 422, (
            "invalid request: body: not JSON text in UTF-8; send the body as UTF-8 JSON "
            "with Content-Type: application/json. See /openapi.json."
        )
    return exc.status_code, str(exc.detail)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error as ``{"error": "<one line>"}`` with its status."""

    @app.exception_handler(HeadwaterError)
    async def headwater_error(_request: Request, exc: HeadwaterError) -> JSONResponse:
        status = status_of(exc)
        if status == 500:
            log.warning("request failed: %s", exc)
        return JSONResponse({"error": one_line(str(exc))}, status_code=status)

    @app.exception_handler(PushConflict)
    async def push_conflict(_request: Request, exc: PushConflict) -> JSONResponse:
        return JSONResponse(
            {"error": one_line(str(exc)), "current_version": exc.current}, status_code=409
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        status, message = _explained(request, exc)
        return JSONResponse(
            {"error": one_line(message)},
            status_code=status,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def bug(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse(
            {
                "error": one_line(
                    f"unexpected {type(exc).__name__}: {exc}; this is a bug, report it."
                )
            },
            status_code=500,
        )


def create_app(
    workspace_path: str | Path, *, host: str = "127.0.0.1", service: Service | None = None
) -> FastAPI:
    """The app over the workspace at ``workspace_path`` (opened and warmed at startup);
    ``host`` is the bind address (``/metrics`` is open only on loopback)."""
    from headwater.api import (
        admin,
        guard,
        hygiene,
        openapi,
        v1,
        v1_admin,
        v1_hooks,
        v1_push,
        v1_rebuilds,
        v1_sessions,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc = service or Service.open(workspace_path)
        svc.start()
        app.state.service = svc
        app.state.keys = KeyRing.from_config(svc.ws.config.api.keys)
        app.state.max_push_bytes = svc.ws.config.api.max_push_bytes
        app.state.search_pool = SearchPool(threads_for(svc.ws.config))
        app.state.metrics = Metrics(svc, app.state.search_pool)
        every = parse_duration(svc.ws.config.api.chart_sample_every) or timedelta(seconds=30)
        app.state.sampler = Sampler(every.total_seconds()).start(svc.ws)
        # What startup made (modules, the app, the opened sinks and model) lives as long as
        # the worker: out of the cyclic collector's way, a full collection walks only what
        # requests made since (60 ms a pause, every thread of the worker stopped, against
        # under 1 ms; docs/performance.md, "Connections spread over the workers").
        gc.freeze()
        try:
            yield
        finally:
            app.state.sampler.stop()
            svc.close()

    app = FastAPI(
        title="Headwater",
        version="1",
        description="Sync, search and push ingestion over one Headwater workspace.",
        lifespan=lifespan,
        # Swagger UI and ReDoc load their scripts from a CDN: off (see docs/api.md).
        docs_url=None,
        redoc_url=None,
    )
    app.state.loopback = is_loopback(host)
    install_error_handlers(app)
    hygiene.install(app)
    openapi.install(app)
    app.include_router(v1.router)
    app.include_router(v1_admin.router)
    app.include_router(v1_push.router)
    app.include_router(v1_sessions.router)
    app.include_router(v1_hooks.router)
    app.include_router(v1_rebuilds.router)
    app.include_router(admin.router)
    admin.mount_static(app)
    admin.install(app)
    app.add_middleware(BalanceConnections)
    guard.install(app)
    install_http_metrics(app)
    return app


def app_from_env() -> FastAPI:
    """The factory uvicorn workers import (``--workers N``): config from $HEADWATER_CONFIG.
    The worker ends with the master that spawned it (``parent_watch``)."""
    from headwater.api.parent_watch import end_with_master

    end_with_master()
    return create_app(
        os.environ.get(CONFIG_ENV, "headwater.toml"),
        host=os.environ.get(HOST_ENV, "127.0.0.1"),
    )
