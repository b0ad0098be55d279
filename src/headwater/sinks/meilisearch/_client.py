"""Talking to Meilisearch over HTTP: requests, waiting on tasks, and errors.

Every write answers ``202`` with a summarized task (``taskUid``); Meilisearch applies
it later (https://www.meilisearch.com/docs/learn/async/asynchronous_operations), so
``MeiliApi.wait`` polls ``GET /tasks/{uid}`` until the task ``succeeded``. A ``failed``
(or ``canceled``) task raises ``MeilisearchTaskFailed`` naming Meilisearch's error code.
Errors: a refused connection, a timeout, HTTP 429 or 5xx are a ``TransientError`` (the
core retries); 401/403 a ``CredentialError``; any other error answer a
``MeilisearchError`` (fatal) carrying the documented ``code``
(https://www.meilisearch.com/docs/reference/errors/overview).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx

from headwater.errors import CredentialError, FatalError, TransientError

POLL_FIRST = 0.002  # seconds before the first task poll; doubles up to POLL_MAX
POLL_MAX = 0.25


class MeilisearchError(FatalError):
    """Meilisearch refused a request; ``code`` is its error code (e.g. ``index_not_found``)."""

    def __init__(self, message: str, *, code: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class MeilisearchTaskFailed(MeilisearchError):
    """A task ended ``failed`` or ``canceled``; ``code`` is the task error's code."""

    def __init__(self, message: str, *, code: str, task_uid: int) -> None:
        super().__init__(message, code=code, status=202)
        self.task_uid = task_uid


class MeiliApi:
    """A small JSON client for the routes the sink uses."""

    def __init__(self, url: str, api_key: str | None, timeout: float, task_timeout: float) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url.rstrip("/")
        self.task_timeout = task_timeout
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    # ---- plain requests -------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One request; the decoded JSON answer (None for an empty body)."""
        try:
            response = self._http.request(method, path, json=body)
        except httpx.TransportError as exc:
            raise TransientError(
                f"meilisearch at {self.url} could not be reached ({exc}); is the server running?"
            ) from exc
        if response.status_code >= 400:
            raise self._error(method, path, response)
        return response.json() if response.content else None

    def _error(self, method: str, path: str, response: httpx.Response) -> Exception:
        status = response.status_code
        try:
            error = response.json()
        except ValueError:
            error = {}
        error = error if isinstance(error, dict) else {}
        code = str(error.get("code") or f"http_{status}")
        message = str(error.get("message") or response.text[:200])
        where = f"meilisearch at {self.url} ({method} {path})"
        if status in (401, 403):
            return CredentialError(
                f"{where} refused the API key: {code}: {message}; check the index's `api_key`"
            )
        if status == 429 or status >= 500:
            return TransientError(f"{where} answered HTTP {status}: {code}: {message}")
        return MeilisearchError(
            f"{where} answered HTTP {status}: {code}: {message}", code=code, status=status
        )

    # ---- tasks ----------------------------------------------------------------------

    def write(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """Send a write and wait for its task to succeed; the finished task."""
        enqueued = self.call(method, path, body)
        return self.wait(int(enqueued["taskUid"]))

    def wait(self, task_uid: int) -> dict[str, Any]:
        """Poll the task until it finished; raise unless it ``succeeded``."""
        deadline = time.monotonic() + self.task_timeout
        pause = POLL_FIRST
        while True:
            task: dict[str, Any] = self.call("GET", f"/tasks/{task_uid}")
            status = task.get("status")
            if status == "succeeded":
                return task
            if status in ("failed", "canceled"):
                raise self._task_error(task_uid, task)
            if time.monotonic() > deadline:
                raise TransientError(
                    f"meilisearch task {task_uid} at {self.url} was still {status} after "
                    f"{self.task_timeout:g} s; raise the index's `task_timeout` or check "
                    "the server's task queue (GET /tasks)"
                )
            time.sleep(pause)
            pause = min(pause * 2, POLL_MAX)

    def _task_error(self, task_uid: int, task: dict[str, Any]) -> MeilisearchTaskFailed:
        error = task.get("error") or {}
        code = str(error.get("code") or task.get("status"))
        detail = str(error.get("message") or "no error was reported")
        link = f" ({error['link']})" if error.get("link") else ""
        return MeilisearchTaskFailed(
            f"meilisearch task {task_uid} ({task.get('type')} on index "
            f"{task.get('indexUid')!r}) {task.get('status')}: {code}: {detail}{link}",
            code=code,
            task_uid=task_uid,
        )

    # ---- the routes -----------------------------------------------------------------

    def add_documents(self, index: str, documents: Sequence[dict[str, Any]]) -> None:
        """Add or replace complete documents (POST, never the merging PUT)."""
        self.write("POST", f"/indexes/{index}/documents", list(documents))

    def delete_where(self, index: str, filter_: str) -> None:
        self.write("POST", f"/indexes/{index}/documents/delete", {"filter": filter_})

    def delete_ids(self, index: str, ids: Sequence[str]) -> None:
        self.write("POST", f"/indexes/{index}/documents/delete-batch", list(ids))

    def document(self, index: str, doc_id: str) -> dict[str, Any] | None:
        """One document by id; None when the index holds none of that id."""
        try:
            found: dict[str, Any] = self.call("GET", f"/indexes/{index}/documents/{doc_id}")
        except MeilisearchError as exc:
            if exc.code == "document_not_found":
                return None
            raise
        return found

    def fetch(self, index: str, **body: Any) -> dict[str, Any]:
        """``POST /indexes/{index}/documents/fetch`` (filter, fields, sort, paging)."""
        found: dict[str, Any] = self.call("POST", f"/indexes/{index}/documents/fetch", body)
        return found

    def search(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = self.call("POST", f"/indexes/{index}/search", body)
        return found
