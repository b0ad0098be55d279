"""Who may call each operation: the documented table the authorization tests hold the router to.

Each route declares its own role (``Depends(require(...))``, enforced by ``auth.Require``
and, before the body is read, by ``guard``); this table says what that role must be,
operation by operation, and docs/api.md lists the same table. The authorization tests
walk the app's routes and call every one as every kind of caller, so a route that is
missing here, or that answers other than its row says, fails them.

Values: ``search``, ``ingest`` or ``admin`` (a bearer key with that role; ``admin``
implies every role), ``none`` (anyone), ``metrics`` (anyone on a loopback bind, an
admin key elsewhere), ``signature`` (no key: the vendor's webhook signature made with
the source's ``webhook_secret``, checked by the route), ``session`` (the admin page: its
sign-in session cookie, never a bearer key) and ``sign-in`` (the admin page's sign-in
form).
"""

from __future__ import annotations

ACCESS: dict[str, str] = {
    "POST /v1/search": "search",
    "GET /v1/status": "admin",
    "GET /v1/sources": "admin",
    "POST /v1/sources/{source_id}/sync": "admin",
    "GET /v1/jobs/{job_id}": "admin",
    "POST /v1/sources/{source_id}/pause": "admin",
    "POST /v1/sources/{source_id}/resume": "admin",
    "GET /v1/runs": "admin",
    "GET /v1/runs/{run_id}": "admin",
    "GET /v1/indexes": "admin",
    "GET /healthz": "none",
    "GET /readyz": "none",
    "GET /v1/documents/{document_id}": "admin",
    "GET /v1/documents": "admin",
    "GET /v1/failures": "admin",
    "GET /v1/failures/summary": "admin",
    "GET /v1/dlq": "admin",
    "GET /v1/dlq/{entry_id}": "admin",
    "POST /v1/dlq/redrive": "admin",
    "DELETE /v1/dlq/{entry_id}": "admin",
    "POST /v1/reconcile": "admin",
    "GET /v1/rebuilds": "admin",
    "POST /v1/rebuilds": "admin",
    "POST /v1/rebuilds/jobs": "admin",
    "GET /v1/rebuilds/jobs/{job_id}": "admin",
    "POST /v1/rebuilds/{name}/switch": "admin",
    "POST /v1/rebuilds/{name}/rollback": "admin",
    "POST /v1/rebuilds/{name}/cancel": "admin",
    "POST /v1/rebuilds/{name}/retire": "admin",
    "GET /metrics": "metrics",
    "POST /v1/sources/{source_id}/documents:batch": "ingest",
    "PUT /v1/sources/{source_id}/documents/{object_id:path}": "ingest",
    "DELETE /v1/sources/{source_id}/documents/{object_id:path}": "ingest",
    "POST /v1/sources/{source_id}/sessions": "ingest",
    "GET /v1/sources/{source_id}/sessions/{session_id}": "ingest",
    "PUT /v1/sources/{source_id}/sessions/{session_id}/documents": "ingest",
    "POST /v1/sources/{source_id}/sessions/{session_id}:complete": "ingest",
    "POST /v1/sources/{source_id}/sessions/{session_id}:abort": "ingest",
    "PUT /v1/groups/{source_id}/{group}": "ingest",
    "DELETE /v1/groups/{source_id}/{group}": "ingest",
    "POST /v1/hooks/{source_id}": "signature",
    "GET /openapi.json": "none",
    "GET /admin/login": "sign-in",
    "POST /admin/login": "sign-in",
    "POST /admin/logout": "session",
    "GET /admin": "session",
    "GET /admin/sources/{source_id}": "session",
    "POST /admin/sources/{source_id}/sync": "session",
    "POST /admin/sources/{source_id}/{action}": "session",
    "GET /admin/failures": "session",
    "POST /admin/failures/{action}": "session",
    "GET /admin/dlq": "session",
    "POST /admin/dlq/{entry_id}/{action}": "session",
    "GET /admin/indexes": "session",
    "POST /admin/indexes/{name}/{action}": "session",
    "GET /admin/runs/{run_id}": "session",
    "GET /admin/documents/{document_id}": "session",
    "GET /admin/charts": "session",
    "GET /admin/search": "session",
}
