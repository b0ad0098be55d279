"""Authorization generated from the router: every operation × every kind of caller.

The operations are read from the app's own routes (a new route without a row in
``headwater.api.access.ACCESS`` fails ``test_every_route_has_a_documented_row``); each
is called on a real server with no key, an unknown key, a key of each role, and a
fixed-principals search key that sends ``user``/``groups``, and its answer is held to
its row: 401 without a valid key, 403 without the role, neither with it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import KEYS, Server

from headwater.api.access import ACCESS
from headwater.api.app import create_app
from headwater.api.guard import api_routes

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
UNKNOWN = "unknown-secret-0123456789abcdef"
PRINCIPALS = {"user": "eve@acme.test", "groups": ["hr"]}
# Who each caller is: its bearer secret (None: no header) and the role it holds.
CALLERS: dict[str, tuple[str | None, str | None]] = {
    "no-key": (None, None),
    "unknown-key": (UNKNOWN, None),
    "admin": (KEYS["admin"], "admin"),
    "ingest": (KEYS["ingest"], "ingest"),
    "search-fixed": (KEYS["search"], "search"),
    "search-asserting": (KEYS["backend"], "search"),
    "search-fixed-sending-principals": (KEYS["search"], "search"),
}
# A body that passes validation, for the operations that read one.
BODIES: dict[str, dict[str, Any]] = {
    "POST /v1/search": {"query": "vacation", "mode": "keyword"},
    "POST /v1/dlq/redrive": {"ids": [999999]},
    "POST /v1/reconcile": {},
    "POST /v1/sources/{source_id}/documents:batch": {
        "operations": [{"object_id": "authz", "version": 1, "text": "x"}]
    },
    "PUT /v1/sources/{source_id}/documents/{object_id:path}": {"version": 1, "text": "x"},
}
PATH_VALUES = {"source_id": "inbox", "object_id": "authz", "entry_id": "999999", "action": "pause"}


def operations() -> list[str]:
    app = create_app("unused.toml")  # the routes only: the lifespan does not run
    found = {"GET /openapi.json"}  # FastAPI's own route, not an APIRoute
    for route in api_routes(app):
        found.update(f"{method} {route.path}" for method in route.methods)
    return sorted(found)


def url_of(operation: str) -> str:
    path = operation.split(" ", 1)[1]
    return re.sub(r"\{(\w+)(:\w+)?\}", lambda m: PATH_VALUES.get(m.group(1), "nope"), path)


def call(server: Server, operation: str, caller: str) -> httpx.Response:
    secret, _role = CALLERS[caller]
    method = operation.split(" ", 1)[0]
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    body = BODIES.get(operation)
    params: dict[str, Any] = {}
    if caller.endswith("sending-principals"):
        if body is not None and operation == "POST /v1/search":
            body = {**body, **PRINCIPALS}
        else:
            params = {"user": PRINCIPALS["user"]}
    if method == "DELETE" and "documents" in operation:
        params["version"] = 1
    return httpx.request(
        method,
        server.url + url_of(operation),
        headers=headers,
        json=body if method in ("POST", "PUT") else None,
        params=params,
        timeout=60,
        follow_redirects=False,
    )


def expected(operation: str, caller: str) -> str:
    """The row's answer for this caller: 401, 403, 303 (to sign in), or "allowed"."""
    access = ACCESS[operation]
    _secret, role = CALLERS[caller]
    if access in ("none", "metrics", "sign-in", "signature"):  # the server binds to loopback
        return "allowed"
    if access == "session":
        return "303"  # a bearer key never opens the admin page
    if role is None:
        return "401"
    if caller.endswith("sending-principals") and operation == "POST /v1/search":
        return "403"  # its principals are fixed
    return "allowed" if role in (access, "admin") else "403"


def verdict(response: httpx.Response) -> str:
    if response.status_code in (401, 403):
        return str(response.status_code)
    if response.status_code == 303 and response.headers["location"] == "/admin/login":
        return "303"
    return "allowed"


def test_every_route_has_a_documented_row() -> None:
    found = operations()
    assert set(found) == set(ACCESS), {
        "routes without a row in ACCESS": sorted(set(found) - set(ACCESS)),
        "rows without a route": sorted(set(ACCESS) - set(found)),
    }
    assert len(found) >= 24
    table = DOCS.read_text()
    missing = [op for op, who in ACCESS.items() if f"| `{op}` | {who} |" not in table]
    assert not missing, f"docs/api.md's access table lacks these rows: {missing}"


@pytest.mark.parametrize("caller", list(CALLERS))
def test_every_operation_answers_its_documented_role(server: Server, caller: str) -> None:
    wrong = []
    for operation in operations():
        response = call(server, operation, caller)
        want, got = expected(operation, caller), verdict(response)
        if want != got:
            wrong.append(f"{operation} as {caller}: {response.status_code} {response.text[:120]}")
        if got in ("401", "403"):
            assert set(response.json()) == {"error"}, response.text
    assert not wrong, "\n".join(wrong)


def test_the_admin_page_signs_in_only_what_caller_has_admin_accepts(server: Server) -> None:
    """The sign-in form uses the API's own role check (``Caller.has``)."""
    signed_in = {}
    for caller, (secret, _role) in CALLERS.items():
        with httpx.Client(base_url=server.url, follow_redirects=False) as browser:
            form = browser.get("/admin/login").text
            token = re.search(r'name="csrf" value="([^"]+)"', form)
            assert token is not None
            r = browser.post("/admin/login", data={"key": secret or "", "csrf": token.group(1)})
            signed_in[caller] = r.headers["location"] == "/admin" and "hw_session" in r.cookies
    assert signed_in == {c: c == "admin" for c in CALLERS}
