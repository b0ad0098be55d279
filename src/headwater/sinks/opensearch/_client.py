"""Talking to OpenSearch over HTTP: JSON requests, ``_bulk``, and errors.

``_bulk`` answers 200 even when items failed: ``errors: true`` and an ``error`` on each
failed item (https://opensearch.org/docs/latest/api-reference/document-apis/bulk/), so
every item is checked; a write with a failed item raises ``OpensearchBulkError`` naming
each item's error ``type`` and ``reason`` (items refused with 429 make it a
``TransientError`` instead). Errors of a request: a refused connection, a timeout, HTTP
429 or 5xx are a ``TransientError`` (the core retries), 401/403 a ``CredentialError``,
any other error answer an ``OpensearchError`` (fatal) with the error's ``type``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from headwater.errors import CredentialError, FatalError, TransientError


class OpensearchError(FatalError):
    """OpenSearch refused a request; ``type`` is its error type (e.g.
    ``index_not_found_exception``), ``status`` the HTTP status."""

    def __init__(self, message: str, *, type: str, status: int) -> None:
        super().__init__(message)
        self.type = type
        self.status = status


class OpensearchBulkError(FatalError):
    """Items of a ``_bulk`` write failed; ``items`` holds ``(_id, type, reason)`` of each."""

    def __init__(self, message: str, items: list[tuple[str, str, str]]) -> None:
        super().__init__(message)
        self.items = items


class OsApi:
    """A small JSON client for the routes the sink uses."""

    def __init__(
        self, url: str, auth: tuple[str, str] | None, timeout: float, verify: bool
    ) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, auth=auth, timeout=timeout, verify=verify)

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        missing_ok: bool = False,
    ) -> Any:
        """One request; the decoded JSON answer. ``missing_ok``: a 404 answers None."""
        return self._send(method, path, params, json=body, missing_ok=missing_ok)

    def bulk(self, actions: Sequence[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        """One ``_bulk`` request (``refresh=wait_for``: searchable when it returns)."""
        if not actions:
            return
        lines = []
        for action, source in actions:
            lines.append(json.dumps(action))
            if source is not None:
                lines.append(json.dumps(source))
        payload = ("\n".join(lines) + "\n").encode()
        answer = self._send(
            "POST",
            "/_bulk",
            {"refresh": "wait_for"},
            content=payload,
            headers={"Content-Type": "application/x-ndjson"},
        )
        if not answer.get("errors"):
            return
        failed: list[tuple[str, str, str]] = []
        throttled = False
        for item in answer.get("items", []):
            result = next(iter(item.values()))
            error = result.get("error")
            if error:
                throttled = throttled or result.get("status") == 429
                failed.append(
                    (str(result.get("_id")), str(error.get("type")), str(error.get("reason")))
                )
        listed = "; ".join(f"{i}: {t}: {r}" for i, t, r in failed[:5])
        more = f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""
        message = f"opensearch at {self.url}: {len(failed)} bulk item(s) failed: {listed}{more}"
        if throttled:
            raise TransientError(message + "; the cluster is overloaded, retry later")
        raise OpensearchBulkError(message, failed)

    def _send(self, method: str, path: str, params: dict[str, str] | None, **kwargs: Any) -> Any:
        missing_ok = kwargs.pop("missing_ok", False)
        try:
            response = self._http.request(method, path, params=params, **kwargs)
        except httpx.TransportError as exc:
            raise TransientError(
                f"opensearch at {self.url} could not be reached ({exc}); is the cluster up?"
            ) from exc
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code >= 400:
            raise self._error(method, path, response)
        return response.json() if response.content else None

    def _error(self, method: str, path: str, response: httpx.Response) -> Exception:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = {}
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            kind, reason = str(error.get("type")), str(error.get("reason"))
        else:
            kind, reason = f"http_{status}", str(error or response.text[:200])
        where = f"opensearch at {self.url} ({method} {path})"
        if status in (401, 403):
            return CredentialError(
                f"{where} refused the credentials: {kind}: {reason}; check the index's "
                "`username` and `password`"
            )
        if status == 429 or status >= 500:
            return TransientError(f"{where} answered HTTP {status}: {kind}: {reason}")
        return OpensearchError(
            f"{where} answered HTTP {status}: {kind}: {reason}", type=kind, status=status
        )
