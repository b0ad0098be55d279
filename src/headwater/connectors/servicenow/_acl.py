"""Who may read a knowledge article: the user criteria of its knowledge base and its own.

ServiceNow lets a user read an article when the user matches one of the knowledge base's
"can read" user criteria (if it has any) *and* one of the article's (if it has any), and
none of the "cannot read" ones. Criteria that name users, groups and roles are resolved
here: each combination of criteria an article needs becomes one group principal,
``principal_for_group(source_id, "criteria:{hash}")``, whose members ``groups()`` computes
as the intersection, over the knowledge base's and the article's criteria sets, of the
union of each criteria's people: its ``user`` list, the members of its ``group`` list
(``sys_user_grmember``) and the holders of its ``role`` list (``sys_user_has_role``,
whose rows include roles inherited through groups and contained roles). Active users with
an email only. An article with no "can read" criteria at all gets the source's
``access``. "Cannot read" criteria (a deny) and criteria that cannot be resolved here
(a script, ``match_all``, companies, departments, locations) fail the article closed.
See https://www.servicenow.com/docs/bundle/xanadu-servicenow-platform/page/product/knowledge-management/concept/user-access-knowledge-base.html.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from headwater.connectors.servicenow._client import ServicenowClient
from headwater.errors import ItemError
from headwater.types import Access, ListedGroup

UNRESOLVABLE = ("company", "department", "location")


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of ``criteria:{hash}`` (the one place that names groups)."""
    return f"{source_id}:group:{name}"


def sys_ids(value: object) -> list[str]:
    """A glide list (comma-separated sys_ids) as a sorted list."""
    return sorted({part.strip() for part in str(value or "").split(",") if part.strip()})


class Unexpressible(ItemError):
    """An article whose readers an ACL cannot express (a deny, a script): fail closed."""

    def __init__(self, message: str) -> None:
        super().__init__("unsupported_acl", message, permanent=True)


class ServicenowAcl:
    """Knowledge base and article user criteria, resolved to people."""

    def __init__(self, client: ServicenowClient, source_id: str) -> None:
        self._client = client
        self._source_id = source_id
        self._criteria: dict[str, dict[str, Any]] = {}
        self._kb: dict[str, tuple[list[str], list[str]]] = {}
        self.seen: dict[str, list[list[str]]] = {}

    def load_bases(self, bases: list[str]) -> None:
        """The can/cannot read criteria of each knowledge base (``kb_uc_*_mtom``)."""
        found: dict[str, tuple[list[str], list[str]]] = {kb: ([], []) for kb in bases}
        query = {"sysparm_query": "kb_knowledge_baseIN" + ",".join(bases)}
        for index, table in enumerate(("kb_uc_can_read_mtom", "kb_uc_cannot_read_mtom")):
            for row in self._client.rows(table, query):
                kb = str(row.get("kb_knowledge_base", ""))
                if kb in found:
                    found[kb][index].append(str(row["user_criteria"]))
        self._kb = found

    def _load(self, ids: Iterable[str]) -> None:
        missing = sorted(set(ids) - set(self._criteria))
        if missing:
            query = {"sysparm_query": "sys_idIN" + ",".join(missing)}
            for row in self._client.rows("user_criteria", query):
                self._criteria[str(row["sys_id"])] = row
        for sid in missing:
            if sid not in self._criteria:
                raise Unexpressible(f"user criteria {sid} cannot be read (deleted, or no access)")

    def article_access(self, article: dict[str, Any]) -> Access | None:
        """The article's readers; None for the source's ``access``; raises
        ``Unexpressible`` (fail closed) or ``TransientError`` (try again)."""
        can_kb, cannot_kb = self._kb.get(str(article.get("kb_knowledge_base")), ([], []))
        can_article = sys_ids(article.get("can_read_user_criteria"))
        cannot = cannot_kb + sys_ids(article.get("cannot_read_user_criteria"))
        if cannot:
            raise Unexpressible(
                f"'cannot read' user criteria {cannot} deny readers, which an ACL cannot "
                "express; the article is not indexed"
            )
        sets = [sorted(s) for s in (can_kb, can_article) if s]
        if not sets:
            return None
        self._load(c for s in sets for c in s)
        for sid in (c for s in sets for c in s):
            reason = _unresolvable(self._criteria[sid])
            if reason:
                name = self._criteria[sid].get("name", sid)
                raise Unexpressible(f"user criteria {name!r} uses {reason}, not resolvable here")
        name = "criteria:" + hashlib.sha256(json.dumps(sets).encode()).hexdigest()[:16]
        self.seen[name] = sets
        return Access(groups=(principal_for_group(self._source_id, name),))

    def groups(self, articles: Iterable[dict[str, Any]]) -> Iterator[ListedGroup]:
        """Each combination of criteria the articles need, with the people matching it."""
        for article in articles:
            try:
                self.article_access(article)
            except Unexpressible:
                continue  # such an article is not indexed: no group to list
        everyone = {c for sets in self.seen.values() for s in sets for c in s}
        people = self._people(everyone)
        for name, sets in sorted(self.seen.items()):
            members = set.intersection(*(set().union(*(people[c] for c in s)) for s in sets))
            labels = " & ".join(
                " | ".join(str(self._criteria[c].get("name", c)) for c in s) for s in sets
            )
            yield ListedGroup(
                principal_for_group(self._source_id, name), sorted(members), display_name=labels
            )

    def _people(self, criteria: set[str]) -> dict[str, set[str]]:
        """Each criteria's people, by email."""
        rows = [self._criteria[c] for c in sorted(criteria)]
        groups = sorted({g for r in rows for g in sys_ids(r.get("group"))})
        roles = sorted({g for r in rows for g in sys_ids(r.get("role"))})
        in_group: dict[str, set[str]] = {g: set() for g in groups}
        if groups:
            query = {"sysparm_query": "groupIN" + ",".join(groups), "sysparm_fields": "user,group"}
            for row in self._client.rows("sys_user_grmember", query):
                in_group[str(row["group"])].add(str(row["user"]))
        with_role: dict[str, set[str]] = {r: set() for r in roles}
        if roles:
            query = {"sysparm_query": "roleIN" + ",".join(roles), "sysparm_fields": "user,role"}
            for row in self._client.rows("sys_user_has_role", query):
                with_role[str(row["role"])].add(str(row["user"]))
        query = {"sysparm_query": "active=true", "sysparm_fields": "sys_id,email"}
        emails = {
            str(row["sys_id"]): str(row["email"])
            for row in self._client.rows("sys_user", query)
            if row.get("email")
        }
        found: dict[str, set[str]] = {}
        for sid in sorted(criteria):
            row = self._criteria[sid]
            ids = set(sys_ids(row.get("user")))
            ids |= {u for g in sys_ids(row.get("group")) for u in in_group.get(g, set())}
            ids |= {u for r in sys_ids(row.get("role")) for u in with_role.get(r, set())}
            found[sid] = {emails[u] for u in ids if u in emails}
        return found


def _unresolvable(row: dict[str, Any]) -> str | None:
    """Why a criteria cannot be resolved to people here, or None."""
    if str(row.get("advanced", "false")).lower() == "true" and row.get("script"):
        return "a script"
    if str(row.get("match_all", "false")).lower() == "true":
        return "match_all"
    parts = [field for field in UNRESOLVABLE if sys_ids(row.get(field))]
    return ", ".join(parts) if parts else None
