"""The admin page's plumbing: the router, templates, sessions and CSRF.

Sign in with an admin key; the server keeps a random session id in memory and sets it
as an HttpOnly, SameSite=Strict cookie. Every form carries the session's CSRF token;
``Posted`` checks it (a POST without it is a 403), ``Signed`` sends a browser without a
session to the sign-in form.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

HERE = FilePath(__file__).parent
COOKIE = "hw_session"
LOGIN_COOKIE = "hw_login"
SESSION_SECONDS = 8 * 3600

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(HERE / "templates"))


@dataclass
class Session:
    key_name: str
    csrf: str
    expires: float


SESSIONS: dict[str, Session] = {}


def mount_static(app: FastAPI) -> None:
    app.mount("/admin/static", StaticFiles(directory=str(HERE / "static")), name="admin-static")


def _session(request: Request) -> Session | None:
    sid = request.cookies.get(COOKIE)
    found = SESSIONS.get(sid) if sid else None
    if found is None or found.expires < time.time():
        return None
    return found


def signed_in(request: Request) -> bool:
    """Whether the request carries a live session (the guard asks before reading a form)."""
    return _session(request) is not None


class SignIn(Exception):
    """No session: send the browser to the sign-in form."""


def session(request: Request) -> Session:
    found = _session(request)
    if found is None:
        raise SignIn()
    return found


def csrf_checked(request: Request, csrf: Annotated[str, Form()] = "") -> Session:
    found = session(request)
    if not hmac.compare_digest(csrf.encode(), found.csrf.encode()):
        raise HTTPException(403, "the form's CSRF token is missing or stale; reload the page.")
    return found


Signed = Annotated[Session, Depends(session)]
Posted = Annotated[Session, Depends(csrf_checked)]


def page(request: Request, name: str, sess: Session | None, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(
        request, name, {"session": sess, "csrf": sess.csrf if sess else "", **context}
    )


def install(app: FastAPI) -> None:
    @app.exception_handler(SignIn)
    async def to_login(_request: Request, _exc: SignIn) -> Response:
        return RedirectResponse("/admin/login", status_code=303)
