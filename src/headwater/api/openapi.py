"""``/openapi.json`` as the server really answers: bearer auth and ``{"error": ...}`` bodies.

FastAPI documents its own 422 body (``{"detail": [...]}``) while every error here is
``{"error": "<one line>"}`` (see ``headwater.api.app``), and it cannot see the bearer
key that ``require`` reads. This rewrites the generated schema once: every error
response is the ``Error`` schema, operations behind a key list 401 and 403, and every
operation has a ``default`` error response. An error a route declares by its code alone
(``responses={409: {"description": ...}}``) gets the ``Error`` body too.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "description": "One line that says what to do."},
        "current_version": {
            "type": ["integer", "null"],
            "description": "A push version conflict (409): the version the manifest holds.",
        },
    },
}
REF = {"$ref": "#/components/schemas/Error"}
AUTH_ERRORS = {
    "401": "No key, or an unknown one: send `Authorization: Bearer <secret>`.",
    "403": "The key lacks the role this operation needs.",
}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": REF}}}


def rewrite(schema: dict[str, Any]) -> dict[str, Any]:
    """The generated schema with the real error bodies and auth responses."""
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for fastapi_own in ("HTTPValidationError", "ValidationError"):
        schemas.pop(fastapi_own, None)
    schemas["Error"] = ERROR_SCHEMA
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if "422" in responses:
                responses["422"] = _error("The request is invalid (body, path or query).")
            for code, response in responses.items():  # errors a route declares by code
                if code[0] in "45" and "content" not in response:
                    response["content"] = _error("")["content"]
            if operation.get("security"):
                for code, description in AUTH_ERRORS.items():
                    responses.setdefault(code, _error(description))
            responses.setdefault("default", _error("Any other error."))
    return schema


def install(app: FastAPI) -> None:
    """Serve the rewritten schema at ``/openapi.json``."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = rewrite(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
