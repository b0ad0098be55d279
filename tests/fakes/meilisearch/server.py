"""A fake Meilisearch server on 127.0.0.1: the routes the sink uses, tasks, auth, faults.

Behaviour and its sources:
- every write answers ``202`` with a summarized task ``{taskUid, indexUid, status:
  "enqueued", type, enqueuedAt}`` and is applied later, one task at a time in order, by a
  worker thread (enqueued -> processing -> succeeded | failed), so a client that does not
  wait reads the old data: https://www.meilisearch.com/docs/learn/async/asynchronous_operations
- ``GET /tasks/{uid}``: the task object with ``status``, ``details``, ``error``
  ``{message, code, type, link}`` when it failed (``task_not_found`` for an unknown uid):
  https://www.meilisearch.com/docs/reference/api/tasks
- indexes: ``GET /indexes/{uid}`` (``index_not_found``, 404), ``POST /indexes {uid,
  primaryKey}`` (uid only ``a-z A-Z 0-9 - _``: ``invalid_index_uid``; an existing uid
  fails the task with ``index_already_exists``), ``DELETE /indexes/{uid}``:
  https://www.meilisearch.com/docs/reference/api/indexes
- settings: ``GET``/``PATCH /indexes/{uid}/settings`` (a PATCH on a missing index
  creates it): https://www.meilisearch.com/docs/reference/api/settings
- documents: ``POST`` add-or-replace, ``PUT`` add-or-update (merges fields; logged so a
  test can prove it is never used), ``GET …/documents/{id}`` (``document_not_found``),
  ``POST …/documents/fetch``, ``POST …/documents/delete`` by filter (a malformed or
  unfilterable filter fails the task with ``invalid_document_filter``),
  ``POST …/documents/delete-batch``, ``DELETE …/documents`` (all):
  https://www.meilisearch.com/docs/reference/api/documents
- ``POST /indexes/{uid}/search``: https://www.meilisearch.com/docs/reference/api/search
- with a master key, requests need ``Authorization: Bearer <key>``: none is ``401
  missing_authorization_header``, a wrong one ``403 invalid_api_key``:
  https://www.meilisearch.com/docs/reference/api/overview#authorization
- error bodies ``{message, code, type, link}``: https://www.meilisearch.com/docs/reference/errors/overview
Test hooks: ``fail_task(...)`` makes the next matching task fail with a given code,
``pause()``/``resume()`` hold the task queue, ``fail_http(...)`` answers the next
requests under a path with an HTTP status, ``log`` records every request.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from fakes.meilisearch._index import FakeIndex, MeiliError

_UID = re.compile(r"[A-Za-z0-9_-]{1,400}")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Logged:
    method: str
    path: str
    body: Any
    status: int
    answer: Any


@dataclass
class _Injected:
    index: str | None
    type: str | None
    code: str
    message: str


@dataclass
class _Task:
    uid: int
    index: str | None
    type: str
    apply: Any
    status: str = "enqueued"
    error: dict[str, str] | None = None
    enqueued_at: str = field(default_factory=_now)
    finished_at: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "indexUid": self.index,
            "status": self.status,
            "type": self.type,
            "canceledBy": None,
            "details": {},
            "error": self.error,
            "duration": None,
            "enqueuedAt": self.enqueued_at,
            "startedAt": None,
            "finishedAt": self.finished_at,
        }


class FakeMeilisearch:
    """Use as ``with FakeMeilisearch() as fake``; ``fake.url`` is its base URL."""

    def __init__(self, master_key: str | None = None, task_delay: float = 0.002) -> None:
        self.master_key = master_key
        self.task_delay = task_delay
        self.indexes: dict[str, FakeIndex] = {}
        self.tasks: dict[int, _Task] = {}
        self.log: list[Logged] = []
        self.lock = threading.RLock()
        self._queue: queue.Queue[_Task | None] = queue.Queue()
        self._running = threading.Event()
        self._running.set()
        self._injected: list[_Injected] = []
        self._http_faults: list[tuple[str, int, int]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._threads = [
            threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
            ),
            threading.Thread(target=self._work, daemon=True),
        ]

    def __enter__(self) -> FakeMeilisearch:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._running.set()
        self._queue.put(None)
        self._httpd.shutdown()
        self._httpd.server_close()

    # ---- test hooks ----------------------------------------------------------------

    def fail_task(
        self,
        code: str,
        message: str = "injected failure",
        *,
        index: str | None = None,
        type: str | None = None,
    ) -> None:
        """The next task on ``index`` of ``type`` (None: any) fails with ``code``."""
        with self.lock:
            self._injected.append(_Injected(index, type, code, message))

    def fail_http(self, prefix: str, status: int, times: int = 1) -> None:
        with self.lock:
            self._http_faults.append((prefix, status, times))

    def pause(self) -> None:
        """Hold the task queue: tasks stay ``enqueued`` until ``resume``."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def requests(self, method: str, pattern: str) -> list[Logged]:
        with self.lock:
            return [r for r in self.log if r.method == method and re.fullmatch(pattern, r.path)]

    # ---- the task queue --------------------------------------------------------------

    def _enqueue(self, index: str | None, kind: str, apply: Any) -> tuple[int, Any]:
        with self.lock:
            task = _Task(uid=len(self.tasks), index=index, type=kind, apply=apply)
            self.tasks[task.uid] = task
        self._queue.put(task)
        return 202, {
            "taskUid": task.uid,
            "indexUid": index,
            "status": "enqueued",
            "type": kind,
            "enqueuedAt": task.enqueued_at,
        }

    def _work(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            self._running.wait()
            with self.lock:
                task.status = "processing"
            time.sleep(self.task_delay)
            with self.lock:
                injected = next(
                    (
                        i
                        for i in self._injected
                        if i.index in (None, task.index) and i.type in (None, task.type)
                    ),
                    None,
                )
                try:
                    if injected is not None:
                        self._injected.remove(injected)
                        raise MeiliError(injected.code, injected.message)
                    task.apply()
                    task.status = "succeeded"
                except MeiliError as exc:
                    task.status = "failed"
                    task.error = exc.body()
                task.finished_at = _now()

    # ---- routing -------------------------------------------------------------------

    def _index(self, uid: str) -> FakeIndex:
        index = self.indexes.get(uid)
        if index is None:
            raise MeiliError("index_not_found", f"Index `{uid}` not found.", 404)
        return index

    def _route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["tasks"] and len(parts) == 2 and method == "GET":
            task = self.tasks.get(int(parts[1]))
            if task is None:
                raise MeiliError("task_not_found", f"Task `{parts[1]}` not found.", 404)
            return 200, task.view()
        if parts == ["indexes"] and method == "POST":
            uid, key = body.get("uid"), body.get("primaryKey")
            if not isinstance(uid, str) or not _UID.fullmatch(uid):
                raise MeiliError("invalid_index_uid", f"`{uid}` is not a valid index uid.")

            def create() -> None:
                if uid in self.indexes:
                    raise MeiliError("index_already_exists", f"Index `{uid}` already exists.")
                self.indexes[uid] = FakeIndex(uid, key)

            return self._enqueue(uid, "indexCreation", create)
        if parts[:1] != ["indexes"] or len(parts) < 2:
            raise MeiliError("bad_request", f"no route {method} {path}", 404)
        uid, rest = parts[1], parts[2:]
        if not rest:
            if method == "GET":
                index = self._index(uid)
                return 200, {
                    "uid": uid,
                    "primaryKey": index.primary_key,
                    "createdAt": _now(),
                    "updatedAt": _now(),
                }
            if method == "DELETE":
                return self._enqueue(uid, "indexDeletion", lambda: self._drop(uid))
        if rest == ["settings"]:
            if method == "GET":
                return 200, json.loads(json.dumps(self._index(uid).settings))
            if method == "PATCH":
                return self._enqueue(
                    uid, "settingsUpdate", lambda: self._ensure(uid).update_settings(body)
                )
        if rest == ["search"] and method == "POST":
            return 200, self._index(uid).search(body or {})
        if rest[:1] == ["documents"]:
            return self._documents(method, uid, rest[1:], body)
        raise MeiliError("bad_request", f"no route {method} {path}", 404)

    def _documents(self, method: str, uid: str, rest: list[str], body: Any) -> tuple[int, Any]:
        kind = "documentAdditionOrUpdate"
        if not rest and method == "POST":
            return self._enqueue(uid, kind, lambda: self._ensure(uid).add(list(body)))
        if not rest and method == "PUT":  # add-or-update: merges into the stored document
            return self._enqueue(uid, kind, lambda: self._merge(uid, list(body)))
        if not rest and method == "DELETE":
            return self._enqueue(uid, "documentDeletion", lambda: self._index(uid).docs.clear())
        if rest == ["fetch"] and method == "POST":
            return 200, self._index(uid).fetch(body or {})
        if rest == ["delete"] and method == "POST":
            if not isinstance(body, dict) or not body.get("filter"):
                raise MeiliError("missing_document_filter", "Missing field `filter`.")
            return self._enqueue(
                uid, "documentDeletion", lambda: self._index(uid).delete_where(body["filter"])
            )
        if rest == ["delete-batch"] and method == "POST":
            ids = [str(i) for i in body]
            return self._enqueue(
                uid, "documentDeletion", lambda: [self._index(uid).docs.pop(i, None) for i in ids]
            )
        if len(rest) == 1 and method == "GET":
            index = self._index(uid)
            doc = index.docs.get(rest[0])
            if doc is None:
                raise MeiliError("document_not_found", f"Document `{rest[0]}` not found.", 404)
            return 200, index.shown(doc, None, False)
        raise MeiliError("bad_request", f"no route {method} documents/{'/'.join(rest)}", 404)

    def _ensure(self, uid: str) -> FakeIndex:
        """Adding documents or settings to a missing index creates it (documented)."""
        if uid not in self.indexes:
            self.indexes[uid] = FakeIndex(uid, None)
        return self.indexes[uid]

    def _drop(self, uid: str) -> None:
        self._index(uid)
        del self.indexes[uid]

    def _merge(self, uid: str, documents: list[dict[str, Any]]) -> None:
        index = self._ensure(uid)
        key = index.primary_key or "id"
        merged = [
            {**index.shown(index.docs.get(str(d.get(key)), {"_vectors": {}}), None, True), **d}
            for d in documents
        ]
        index.add(merged)

    def _serve(self, request: BaseHTTPRequestHandler, method: str) -> None:
        path = urlsplit(request.path).path
        length = int(request.headers.get("content-length") or 0)
        raw = request.rfile.read(length) if length else b""
        status: int
        answer: Any
        with self.lock:
            fault = next((f for f in self._http_faults if path.startswith(f[0])), None)
            try:
                if fault is not None:
                    self._http_faults.remove(fault)
                    if fault[2] > 1:
                        self._http_faults.append((fault[0], fault[1], fault[2] - 1))
                    raise MeiliError("internal", "injected HTTP failure", fault[1])
                self._authorize(request.headers.get("Authorization"))
                body = json.loads(raw) if raw else None
                status, answer = self._route(method, path, body)
            except MeiliError as exc:
                status, answer = exc.status, exc.body()
            self.log.append(Logged(method, path, json.loads(raw) if raw else None, status, answer))
        data = json.dumps(answer).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def _authorize(self, header: str | None) -> None:
        if self.master_key is None:
            return
        if not header:
            raise MeiliError(
                "missing_authorization_header",
                "The Authorization header is missing. It must use the bearer authorization method.",
                401,
            )
        if header != f"Bearer {self.master_key}":
            raise MeiliError("invalid_api_key", "The provided API key is invalid.", 403)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                service._serve(self, "GET")

            def do_POST(self) -> None:
                service._serve(self, "POST")

            def do_PUT(self) -> None:
                service._serve(self, "PUT")

            def do_PATCH(self) -> None:
                service._serve(self, "PATCH")

            def do_DELETE(self) -> None:
                service._serve(self, "DELETE")

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
