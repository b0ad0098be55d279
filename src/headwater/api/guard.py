"""What every request passes before a route reads it: its Host, its Origin, its key, its size.

One ASGI middleware, outermost, that looks only at the request line and the headers:

- **Open mode** (no ``[[api.keys]]``: every caller is a local admin) answers only requests
  addressed to a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``, any port), 421
  otherwise: a DNS-rebinding page reaches the server under its own name
  (``Host: evil.example:8700``), so the bind address alone does not keep it out.
- **Another site's Origin** is refused (403) on an unsafe method (POST, PUT, PATCH,
  DELETE) in open mode, and on every ``/admin`` request (cookie-authenticated) in any
  mode: a cross-site form could otherwise pause or start syncs as the local admin.
- **The caller before the body**: a route that needs a role (``auth.Require``) gets its
  401 or 403 here, before a byte of the body is read; FastAPI itself parses the body first.
- **Bounded bodies**: at most ``BODY_LIMIT`` bytes (``[api] max_push_bytes`` for push
  routes), answered 413 from the declared Content-Length before reading, or as soon as a
  chunked body passes the limit (only the limit is ever buffered).
- **Security headers** on every answer: ``nosniff``, a same-origin referrer policy, and a
  Content Security Policy (``frame-ancestors 'none'``; the admin page loads only its own
  files).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from headwater.api.admin import signed_in
from headwater.api.auth import KeyRing, Require, is_loopback

BODY_LIMIT = 4 * 1024 * 1024  # every body but a push: a search is at most a few hundred KB
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
API_CSP = "default-src 'none'; frame-ancestors 'none'"
ADMIN_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
)


def host_name(host: str) -> str:
    """The name in a Host header, without its port (``[::1]:8700`` → ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def loopback_host(host: str) -> bool:
    """Whether a ``Host`` header names a loopback host (any port)."""
    name = host_name(host)
    return bool(name) and is_loopback(name)


def foreign_origin(headers: Headers) -> str | None:
    """The other site a request comes from (its Origin), or None when it is this one."""
    host = headers.get("host", "").strip().lower()
    origin = headers.get("origin")
    if origin is None:
        fetch_site = headers.get("sec-fetch-site", "")
        return f"a {fetch_site} page" if fetch_site in ("cross-site", "same-site") else None
    parts = urlsplit(origin.strip())
    if parts.scheme in ("http", "https") and parts.netloc.lower() == host and host:
        return None
    return origin


def api_routes(app: FastAPI) -> list[APIRoute]:
    """Every operation of the app, in matching order, whichever FastAPI keeps the routes
    of included routers (newer versions nest them instead of copying them into
    ``app.routes``). The routers are included without a prefix, so paths are whole."""
    cached: list[APIRoute] | None = getattr(app.state, "api_routes", None)
    if cached is not None:
        return cached
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # FastAPI before 0.165: included routes are copied into app.routes
        routes = list(app.routes)
    else:
        routes = [context.route for context in iter_route_contexts(app.routes)]
    found = [route for route in routes if isinstance(route, APIRoute)]
    app.state.api_routes = found
    return found


def route_of(app: FastAPI, scope: Scope) -> APIRoute | None:
    """The route that fully matches ``scope``, or None."""
    for route in api_routes(app):
        match, _child = route.matches(scope)
        if match == Match.FULL:
            return route
    return None


def _calls(dependant: Any) -> list[Any]:
    found = []
    for dependency in dependant.dependencies:
        found.append(dependency.call)
        found.extend(_calls(dependency))
    return found


def role_of(route: APIRoute) -> str | None:
    """The role a route's ``Require`` dependency asks for, or None (no key needed here)."""
    return next((c.role for c in _calls(route.dependant) if isinstance(c, Require)), None)


def limit_of(app: FastAPI, route: APIRoute | None) -> int:
    """The body limit of a route: push routes' ``max_push_bytes``, else BODY_LIMIT."""
    if route is not None and "push" in route.tags:
        limit: int = app.state.max_push_bytes
        return limit
    return BODY_LIMIT


def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """An ``{"error": ...}`` answer with ``status``."""
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def too_large(limit: int, push: bool) -> Response:
    """The 413 answer for a body over ``limit``."""
    what = "a push request" if push else "a request body"
    fix = (
        "split the batch, or raise [api] max_push_bytes"
        if push
        else "send a smaller body (a search needs a few hundred KB at most; see docs/api.md)"
    )
    return error(413, f"{what} may be at most {limit} bytes; {fix}.")


def refusal(app: FastAPI, scope: Scope, route: APIRoute | None) -> Response | None:
    """The answer to give instead of the app's, or None to go on."""
    headers = Headers(scope=scope)
    path = str(scope.get("path", ""))
    method = str(scope.get("method", "GET")).upper()
    ring: KeyRing = app.state.keys
    if ring.open and not loopback_host(headers.get("host", "")):
        return error(
            421,
            f"Host {headers.get('host', '')!r} is not a loopback name; with no [[api.keys]] "
            "configured the API answers only requests addressed to localhost, 127.0.0.1 or "
            "[::1] (any port), so a web page cannot reach it under another name. Use one of "
            "those, or configure api.keys.",
        )
    admin = path == "/admin" or path.startswith("/admin/")
    if method in UNSAFE and (ring.open or admin):
        other = foreign_origin(headers)
        if other is not None:
            where = "to /admin" if admin else "in open mode"
            return error(
                403,
                f"a {method} from {other!r} is refused: requests {where} must come from this "
                "server's own pages (the same Origin as the Host). Use the server's own "
                "pages, or call it from a program (which sends no Origin header).",
            )
    if route is None:
        return None
    role = role_of(route)
    if role is not None:
        try:
            Require(role).check(Request(scope))
        except HTTPException as exc:
            return error(exc.status_code, str(exc.detail), exc.headers)
    elif (
        admin
        and method in UNSAFE
        and route.path != "/admin/login"
        and not signed_in(Request(scope))
    ):
        return RedirectResponse("/admin/login", status_code=303)  # before the form is read
    return None


async def _read_bounded(receive: Receive, limit: int) -> list[Message] | None:
    """The body's messages, or None as soon as they pass ``limit`` bytes (not read further)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages  # http.disconnect: let the app see it
        size += len(message.get("body", b""))
        if size > limit:
            return None
        if not message.get("more_body", False):
            return messages


class Guard:
    """The ASGI middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        csp = ADMIN_CSP if path == "/admin" or path.startswith("/admin/") else API_CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    (b"content-security-policy", csp.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),  # no-referrer would make Origin "null"
                    (b"x-frame-options", b"DENY"),
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        app: FastAPI = scope["app"]
        route = route_of(app, scope)
        answer = refusal(app, scope, route)
        if answer is None:
            answer, receive = await self._bounded(app, scope, receive, route)
        if answer is not None:
            await answer(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    async def _bounded(
        self, app: FastAPI, scope: Scope, receive: Receive, route: APIRoute | None
    ) -> tuple[Response | None, Receive]:
        limit = limit_of(app, route)
        push = limit != BODY_LIMIT
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        if declared is not None:
            if declared.strip().isdigit() and int(declared) > limit:
                return too_large(limit, push), receive
            return None, receive  # the server reads no more than it declared
        if "chunked" not in headers.get("transfer-encoding", "").lower():
            return None, receive
        messages = await _read_bounded(receive, limit)
        if messages is None:
            return too_large(limit, push), receive

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        return None, replay


def install(app: FastAPI) -> None:
    """Add the guard outermost (call it after every other ``add_middleware``)."""
    app.add_middleware(Guard)
