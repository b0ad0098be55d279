"""A fake OpenSearch cluster on 127.0.0.1: the routes the sink uses, auth, faults.

Behaviour and its sources:
- indexes: ``PUT /{index}`` with settings and mappings (lowercase names that do not
  start with ``_`` or ``-``: ``invalid_index_name_exception``; an existing one:
  ``resource_already_exists_exception``), ``GET /{index}/_mapping``, ``PUT
  /{index}/_mapping`` (adds fields; a field mapped already must keep its type:
  ``illegal_argument_exception``;
  https://opensearch.org/docs/latest/api-reference/index-apis/put-mapping/), ``DELETE /{index}``
  (``index_not_found_exception`` when missing; its aliases go with it):
  https://opensearch.org/docs/latest/api-reference/index-apis/create-index/
- ``POST /_bulk`` (NDJSON, ``index`` and ``delete`` actions): answers 200 with
  ``errors`` and one result per item, a failed item carrying ``status`` and ``error``
  ``{type, reason}``; a delete of a missing id is ``not_found``, not an error:
  https://opensearch.org/docs/latest/api-reference/document-apis/bulk/
- ``GET /{index}/_doc/{id}`` and ``POST /{index}/_mget`` (realtime), ``_search``,
  ``_count``, ``_delete_by_query`` (``refresh``):
  https://opensearch.org/docs/latest/api-reference/document-apis/delete-by-query/
- aliases: ``GET /_alias/{name}`` (404 when no index has it), ``POST /_aliases`` applies
  all its actions atomically or none (a missing index or alias fails the whole call);
  a search on an alias searches its index:
  https://opensearch.org/docs/latest/api-reference/index-apis/alias/
- errors ``{"error": {"root_cause", "type", "reason"}, "status"}``; with a user set,
  requests need HTTP basic auth (401 otherwise).
Test hooks: ``fail_items(index, n, type, reason, status)`` fails the next ``n`` bulk
items on an index, ``fail_http(prefix, status)`` answers the next request under a path
with an HTTP status; ``log`` records every request.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from fakes.opensearch._index import FakeIndex
from fakes.opensearch._query import QueryError

_NAME = re.compile(r"[a-z0-9][a-z0-9_.+-]*")


class OsFault(Exception):
    def __init__(self, status: int, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.kind, self.reason = status, kind, reason

    def body(self) -> dict[str, Any]:
        cause = {"type": self.kind, "reason": self.reason}
        return {"error": {"root_cause": [cause], **cause}, "status": self.status}


@dataclass(frozen=True)
class Logged:
    method: str
    path: str
    params: dict[str, str]
    body: Any
    status: int


class FakeOpensearch:
    """Use as ``with FakeOpensearch() as fake``; ``fake.url`` is its base URL."""

    def __init__(self, user: str | None = None, password: str | None = None) -> None:
        self.user, self.password = user, password
        self.indexes: dict[str, FakeIndex] = {}
        self.aliases: dict[str, set[str]] = {}  # alias -> index names
        self.log: list[Logged] = []
        self.lock = threading.RLock()
        self._item_faults: list[list[Any]] = []
        self._http_faults: list[tuple[str, int]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeOpensearch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # ---- test hooks ----------------------------------------------------------------

    def fail_items(self, index: str, count: int, kind: str, reason: str, status: int = 400) -> None:
        with self.lock:
            self._item_faults.append([index, count, kind, reason, status])

    def fail_http(self, prefix: str, status: int) -> None:
        with self.lock:
            self._http_faults.append((prefix, status))

    # ---- routes --------------------------------------------------------------------

    def _index(self, name: str) -> FakeIndex:
        targets = self.aliases.get(name)
        if targets and len(targets) == 1:
            name = next(iter(targets))
        index = self.indexes.get(name)
        if index is None:
            raise OsFault(404, "index_not_found_exception", f"no such index [{name}]")
        return index

    def _route(self, method: str, parts: list[str], params: dict[str, str], raw: bytes) -> Any:
        body = json.loads(raw) if raw and parts[-1:] != ["_bulk"] else None
        refresh = params.get("refresh") in ("true", "wait_for", "")
        if parts == ["_bulk"] and method == "POST":
            return self._bulk(raw.decode(), refresh)
        if parts == ["_aliases"] and method == "POST":
            return self._alias_actions(body["actions"])
        if len(parts) == 2 and parts[0] == "_alias" and method == "GET":
            held = sorted(self.aliases.get(parts[1], set()))
            if not held:
                raise OsFault(404, "aliases_not_found_exception", f"alias [{parts[1]}] missing")
            return {name: {"aliases": {parts[1]: {}}} for name in held}
        name, rest = parts[0], parts[1:]
        if not rest:
            if method == "PUT":
                return self._create(name, body or {})
            if method == "DELETE":
                self._index(name)
                del self.indexes[name]
                for members in self.aliases.values():
                    members.discard(name)
                self.aliases = {a: m for a, m in self.aliases.items() if m}
                return {"acknowledged": True}
        index = self._index(name)
        if rest == ["_mapping"] and method == "GET":
            return {index.name: {"mappings": index.mappings}}
        if rest == ["_mapping"] and method == "PUT":
            held = index.mappings.setdefault("properties", {})
            for field, wanted in (body or {}).get("properties", {}).items():
                if field in held and held[field].get("type") != wanted.get("type"):
                    raise OsFault(
                        400,
                        "illegal_argument_exception",
                        f"mapper [{field}] cannot be changed from type "
                        f"[{held[field].get('type')}] to [{wanted.get('type')}]",
                    )
                held[field] = wanted
            return {"acknowledged": True}
        if rest[:1] == ["_doc"] and len(rest) == 2 and method == "GET":
            doc_id = unquote(rest[1])
            found = index.docs.get(doc_id)
            if found is None:
                raise OsFault(404, "not_found", json.dumps({"_id": doc_id, "found": False}))
            return {"_index": index.name, "_id": doc_id, "found": True, "_source": found}
        if rest == ["_mget"] and method == "POST":
            return {"docs": [self._got(index, str(i)) for i in body["ids"]]}
        if rest == ["_search"] and method in ("POST", "GET"):
            return index.search(body or {})
        if rest == ["_count"] and method in ("POST", "GET"):
            found = index.search({**(body or {}), "size": 0})
            return {"count": found["hits"]["total"]["value"]}
        if rest == ["_delete_by_query"] and method == "POST":
            ids = [
                h["_id"]
                for h in index.search({"query": body["query"], "size": 10_000})["hits"]["hits"]
            ]
            deleted = sum(1 for i in ids if index.docs.pop(i, None) is not None)
            if refresh:
                index.refresh()
            return {"took": 1, "deleted": deleted, "failures": []}
        if rest == ["_refresh"] and method == "POST":
            index.refresh()
            return {"_shards": {"failed": 0}}
        raise OsFault(400, "illegal_argument_exception", f"no route {method} /{'/'.join(parts)}")

    def _got(self, index: FakeIndex, doc_id: str) -> dict[str, Any]:
        found = index.docs.get(doc_id)
        if found is None:
            return {"_index": index.name, "_id": doc_id, "found": False}
        return {"_index": index.name, "_id": doc_id, "found": True, "_source": found}

    def _create(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if not _NAME.fullmatch(name):
            raise OsFault(400, "invalid_index_name_exception", f"Invalid index name [{name}]")
        if name in self.indexes or name in self.aliases:
            raise OsFault(
                400, "resource_already_exists_exception", f"index [{name}] already exists"
            )
        self.indexes[name] = FakeIndex(name, body)
        return {"acknowledged": True, "shards_acknowledged": True, "index": name}

    def _alias_actions(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        planned = {alias: set(members) for alias, members in self.aliases.items()}
        for action in actions:
            kind, spec = next(iter(action.items()))
            index, alias = spec["index"], spec["alias"]
            if index not in self.indexes:
                raise OsFault(404, "index_not_found_exception", f"no such index [{index}]")
            members = planned.setdefault(alias, set())
            if kind == "add":
                members.add(index)
            elif kind == "remove":
                if index not in members:
                    raise OsFault(404, "aliases_not_found_exception", f"aliases [{alias}] missing")
                members.discard(index)
        self.aliases = {a: m for a, m in planned.items() if m}
        return {"acknowledged": True}

    def _bulk(self, text: str, refresh: bool) -> dict[str, Any]:
        lines = [line for line in text.split("\n") if line.strip()]
        items: list[dict[str, Any]] = []
        touched: set[str] = set()
        position = 0
        while position < len(lines):
            action = json.loads(lines[position])
            kind, meta = next(iter(action.items()))
            position += 1
            source = None
            if kind in ("index", "create", "update"):
                source = json.loads(lines[position])
                position += 1
            doc_id = str(meta.get("_id"))
            result: dict[str, Any] = {"_index": meta.get("_index"), "_id": doc_id}
            try:
                index = self._index(str(meta.get("_index")))
                fault = next((f for f in self._item_faults if f[0] == index.name), None)
                if fault is not None:
                    fault[1] -= 1
                    if fault[1] == 0:
                        self._item_faults.remove(fault)
                    raise OsFault(fault[4], fault[2], fault[3])
                if kind == "index":
                    index.check(doc_id, source or {})
                    existed = doc_id in index.docs
                    index.docs[doc_id] = source or {}
                    result.update(
                        result="updated" if existed else "created", status=200 if existed else 201
                    )
                elif kind == "delete":
                    gone = index.docs.pop(doc_id, None) is not None
                    result.update(
                        result="deleted" if gone else "not_found", status=200 if gone else 404
                    )
                else:
                    raise OsFault(
                        400, "illegal_argument_exception", f"action [{kind}] not modelled"
                    )
                touched.add(index.name)
            except QueryError as exc:
                result.update(status=400, error={"type": exc.kind, "reason": exc.reason})
            except OsFault as exc:
                result.update(status=exc.status, error={"type": exc.kind, "reason": exc.reason})
            items.append({kind: result})
        if refresh:
            for name in touched:
                self.indexes[name].refresh()
        return {
            "took": 1,
            "errors": any("error" in next(iter(i.values())) for i in items),
            "items": items,
        }

    def _serve(self, request: BaseHTTPRequestHandler, method: str) -> None:
        parts_of = urlsplit(request.path)
        parts = [p for p in parts_of.path.split("/") if p]
        params = {k: v[-1] for k, v in parse_qs(parts_of.query, keep_blank_values=True).items()}
        length = int(request.headers.get("content-length") or 0)
        raw = request.rfile.read(length) if length else b""
        with self.lock:
            fault = next((f for f in self._http_faults if parts_of.path.startswith(f[0])), None)
            try:
                if fault is not None:
                    self._http_faults.remove(fault)
                    raise OsFault(fault[1], "injected_exception", "injected HTTP failure")
                self._authorize(request.headers.get("Authorization"))
                status, answer = 200, self._route(method, parts, params, raw)
            except OsFault as exc:
                status = exc.status
                answer = json.loads(exc.reason) if exc.kind == "not_found" else exc.body()
            except QueryError as exc:
                status, answer = 400, OsFault(400, exc.kind, exc.reason).body()
            logged_body = (
                raw.decode() if parts[-1:] == ["_bulk"] else (json.loads(raw) if raw else None)
            )
            self.log.append(Logged(method, parts_of.path, params, logged_body, status))
        data = json.dumps(answer).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def _authorize(self, header: str | None) -> None:
        if self.user is None:
            return
        expected = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        if header != f"Basic {expected}":
            raise OsFault(401, "security_exception", "Unauthorized")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                service._serve(self, "GET")

            def do_POST(self) -> None:
                service._serve(self, "POST")

            def do_PUT(self) -> None:
                service._serve(self, "PUT")

            def do_DELETE(self) -> None:
                service._serve(self, "DELETE")

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
