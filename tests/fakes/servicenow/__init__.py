"""A fake ServiceNow Table API: tables of rows, encoded queries, offset paging, errors.

- ``GET /api/now/table/{table}`` with ``sysparm_query`` (an encoded query: conditions
  joined by ``^``; ``field=value``, ``fieldINa,b``, ``field>=value``; ``ORDERBYfield``),
  ``sysparm_fields``, ``sysparm_limit``, ``sysparm_offset``,
  ``sysparm_exclude_reference_link``; the answer ``{"result": [...]}`` with
  ``X-Total-Count`` and a ``Link`` header (``rel="first"``, ``"next"``, ``"last"``):
  https://www.servicenow.com/docs/bundle/xanadu-api-reference/page/integrate/inbound-rest/concept/c_TableAPI.html
  https://developer.servicenow.com/dev.do#!/reference/api/xanadu/rest/c_TableAPI
- basic authentication; a bad one answers ``401 {"error": {"message": "User Not
  Authenticated", "detail": "Required to provide Auth information"}, "status":
  "failure"}``; a table the user may not read answers 403 ``User Not Authorized``:
  https://www.servicenow.com/docs/bundle/xanadu-api-reference/page/integrate/inbound-rest/concept/c_RESTAPI.html
- rate limit rules: 429 with ``Retry-After`` and ``X-RateLimit-*`` headers:
  https://www.servicenow.com/docs/bundle/xanadu-api-reference/page/integrate/inbound-rest/concept/inbound-REST-API-rate-limiting.html
- the tables the connector reads: ``kb_knowledge_base``, ``kb_knowledge``
  (``workflow_state``, ``can_read_user_criteria``, ``cannot_read_user_criteria``),
  ``kb_uc_can_read_mtom``, ``kb_uc_cannot_read_mtom``, ``user_criteria`` (``user``,
  ``group``, ``role``, ``match_all``, ``advanced``, ``script``, ``company``...),
  ``sys_user``, ``sys_user_grmember``, ``sys_user_has_role`` (inherited roles included):
  https://www.servicenow.com/docs/bundle/xanadu-servicenow-platform/page/product/knowledge-management/concept/user-access-knowledge-base.html
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlencode

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeServicenow"]


def _matches(row: dict[str, Any], condition: str) -> bool:
    if ">=" in condition:
        field, value = condition.split(">=", 1)
        return str(row.get(field, "")) >= value
    if "IN" in condition and "=" not in condition:
        field, values = condition.split("IN", 1)
        return str(row.get(field, "")) in values.split(",")
    field, value = condition.split("=", 1)
    return str(row.get(field, "")) == value


class FakeServicenow(FakeApi):
    """``with FakeServicenow() as sn: sn.tables["kb_knowledge"].append({...})``."""

    def __init__(self) -> None:
        super().__init__(user="kb.reader", token="pa55word")
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.denied: set[str] = set()  # tables the user may not read
        self.rate_limited = 0
        self.retry_after = "0"
        self.broken_after: dict[str, int] = {}  # table -> requests answered before 500s

    def authorized(self, headers: dict[str, str]) -> bool:
        expected = base64.b64encode(f"{self.user}:{self.token}".encode()).decode()
        return headers.get("authorization") == f"Basic {expected}"

    def _faults(self, call: Call) -> Answer | None:
        if self.rate_limited > 0:
            self.rate_limited -= 1
            error = {"message": "Too Many Requests", "detail": "Rate limit exceeded"}
            headers = {"Retry-After": self.retry_after, "X-RateLimit-Limit": "100"}
            return Answer(429, {"error": error, "status": "failure"}, headers)
        return super()._faults(call)

    def _dispatch(
        self, method: str, raw: str, headers: dict[str, str], body: bytes = b""
    ) -> Answer:
        answer = super()._dispatch(method, raw, headers, body)
        if answer.status == 401:
            error = {"message": "User Not Authenticated", "detail": "Required to provide Auth information"}  # fmt: skip
            return Answer(401, {"error": error, "status": "failure"})
        return answer

    def answer(self, call: Call) -> Answer:
        prefix = "/api/now/table/"
        if not call.path.startswith(prefix):
            return Answer(400, {"error": {"message": "Requested URI does not represent any resource"}, "status": "failure"})  # fmt: skip
        table = call.path.removeprefix(prefix)
        if table in self.denied:
            error = {"message": "User Not Authorized", "detail": f"Read access to {table} denied"}
            return Answer(403, {"error": error, "status": "failure"})
        if table not in self.tables:
            return Answer(400, {"error": {"message": "Invalid table " + table, "detail": None}, "status": "failure"})  # fmt: skip
        if table in self.broken_after:
            if self.broken_after[table] <= 0:
                error = {"message": "Internal server error", "detail": None}
                return Answer(500, {"error": error, "status": "failure"})
            self.broken_after[table] -= 1
        q = call.query
        rows = list(self.tables[table])
        order: list[str] = []
        for part in filter(None, q.get("sysparm_query", "").split("^")):
            if part.startswith("ORDERBY"):
                order.append(part.removeprefix("ORDERBY"))
            else:
                rows = [r for r in rows if _matches(r, part)]
        for field in reversed(order):
            rows.sort(key=lambda r, f=field: str(r.get(f, "")))
        limit = int(q.get("sysparm_limit", 10000))
        offset = int(q.get("sysparm_offset", 0))
        chunk = rows[offset : offset + limit]
        if q.get("sysparm_fields"):
            wanted = q["sysparm_fields"].split(",")
            chunk = [{f: r.get(f, "") for f in wanted} for r in chunk]
        links = [f'<{self.url}{call.path}?{urlencode(q | {"sysparm_offset": 0})}>;rel="first"']
        if offset + limit < len(rows):
            following = urlencode(q | {"sysparm_offset": offset + limit})
            links.append(f'<{self.url}{call.path}?{following}>;rel="next"')
        headers = {"X-Total-Count": str(len(rows)), "Link": ",".join(links)}
        return Answer(200, {"result": chunk}, headers)
