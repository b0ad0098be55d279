"""Text the API accepts: valid Unicode, and no NUL outside a document's content.

A JSON ``\\ud800`` escape decodes to a lone surrogate that no UTF-8 encoder accepts, a
NUL (``\\x00``) is refused by PostgreSQL text columns, and a percent-encoded path or
query that is not UTF-8 is decoded with U+FFFD replacements (so two different object
ids would become one). Each of these is a client error: the request is answered 422
before it reaches the manifest, instead of a 500 from deep inside it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote_to_bytes

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from starlette.types import ASGIApp, Receive, Scope, Send


def problem(value: str, *, nul: bool = True) -> str | None:
    """What is wrong with ``value`` as API text, or None."""
    if nul and "\x00" in value:
        return "must not contain NUL characters (\\x00); remove them"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate such as \\ud800); send UTF-8 text"
    return None


def _check(value: Any, *, nul: bool) -> None:
    if isinstance(value, str):
        found = problem(value, nul=nul)
        if found is not None:
            raise ValueError(found)
    elif isinstance(value, list | tuple):
        for item in value:
            _check(item, nul=nul)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, nul=nul)
            _check(item, nul=nul)


class CleanModel(BaseModel):
    """A request body whose every string is valid Unicode without NUL (``text`` may hold
    NUL: content is the parser's to judge, and a binary one becomes a failure record)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _clean(cls, value: Any, info: ValidationInfo) -> Any:
        _check(value, nul=info.field_name != "text")
        return value


def url_problem(raw_path: bytes, query: bytes) -> str | None:
    """What is wrong with a request's path or query string, or None."""
    try:
        path = unquote_to_bytes(raw_path).decode("utf-8")
    except UnicodeDecodeError:
        return "path: the percent-encoded path is not UTF-8; encode ids as UTF-8 before escaping"
    if "\x00" in path:
        return "path: must not contain NUL characters (%00); remove them"
    try:
        pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        return "query: the percent-encoded query is not UTF-8; encode values as UTF-8"
    if any("\x00" in name or "\x00" in value for name, value in pairs):
        return "query: must not contain NUL characters (%00); remove them"
    return None


class CleanUrls:
    """ASGI middleware: a URL that is not UTF-8 or holds a NUL is answered 422 at once."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path") or str(scope.get("path", "")).encode("utf-8")
            found = url_problem(raw, scope.get("query_string", b""))
            if found is not None:
                response = JSONResponse(
                    {"error": f"invalid request: {found}. See /openapi.json."}, status_code=422
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def install(app: FastAPI) -> None:
    """Add the middleware that answers 422 to a path or query that is not UTF-8 or holds a NUL."""
    app.add_middleware(CleanUrls)
