"""Who may read a Help Center article: its user segments, resolved to people.

An article without a user segment is visible to everyone (``public``). An article
restricted to user segments (``user_segment_id``, or ``user_segment_ids`` on Enterprise:
any of them) is readable by each segment's members, as the group principal
``principal_for_group(source_id, "segment:{id}")``. Zendesk has no endpoint listing a
segment's members, so ``groups()`` evaluates each segment's rule over the account's users,
as the segment documents it: ``user_type`` ``staff`` (agents and admins) or
``signed_in_users`` (anyone signed in); all of ``tags``, one of ``or_tags``, membership of
one of ``group_ids``, one of ``organization_ids``; and everyone in ``added_user_ids``.
Suspended and deleted users are left out; users are matched by email. Permission groups
govern who may *edit* an article, not who may read it, so they grant nothing here.
See https://developer.zendesk.com/api-reference/help_center/help-center-api/user_segments/.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from headwater.connectors.zendesk._client import ZendeskClient
from headwater.types import Access, ListedGroup

STAFF = ("agent", "admin")


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of ``segment:{id}`` (the one place that names groups)."""
    return f"{source_id}:group:{name}"


def segment_ids(article: dict[str, Any]) -> list[int]:
    """The user segments an article is restricted to (none: public)."""
    ids = article.get("user_segment_ids") or []
    if not ids and article.get("user_segment_id") is not None:
        ids = [article["user_segment_id"]]
    return sorted(int(i) for i in ids)


class ZendeskAcl:
    """Article readers, and the segments' members."""

    def __init__(self, client: ZendeskClient, source_id: str) -> None:
        self._client = client
        self._source_id = source_id
        self._segments: dict[int, dict[str, Any]] = {}

    def segment(self, sid: int) -> dict[str, Any]:
        """One user segment (remembered); raises when it cannot be read."""
        if sid not in self._segments:
            found = self._client.get(f"/api/v2/help_center/user_segments/{sid}")
            self._segments[sid] = dict(found.get("user_segment") or {})
        return self._segments[sid]

    def article_access(self, article: dict[str, Any]) -> Access:
        """Who may read ``article``; raises when a segment cannot be read (fail closed)."""
        ids = segment_ids(article)
        if not ids:
            return Access(public=True)
        for sid in ids:
            self.segment(sid)  # a segment that cannot be read fails the article
        groups = [principal_for_group(self._source_id, f"segment:{sid}") for sid in ids]
        return Access(groups=tuple(groups))

    def groups(self) -> Iterator[ListedGroup]:
        """Each user segment with its members' emails, by its rule."""
        users = [u for u in self._client.every("/api/v2/users", "users") if _live(u)]
        in_groups: dict[int, set[int]] = defaultdict(set)
        for row in self._client.every("/api/v2/group_memberships", "group_memberships"):
            in_groups[int(row["user_id"])].add(int(row["group_id"]))
        in_orgs: dict[int, set[int]] = defaultdict(set)
        for row in self._client.every(
            "/api/v2/organization_memberships", "organization_memberships"
        ):
            in_orgs[int(row["user_id"])].add(int(row["organization_id"]))
        for user in users:
            if user.get("organization_id") is not None:
                in_orgs[int(user["id"])].add(int(user["organization_id"]))
        for segment in self._client.every("/api/v2/help_center/user_segments", "user_segments"):
            members = sorted(
                {
                    str(u["email"])
                    for u in users
                    if _matches(segment, u, in_groups[int(u["id"])], in_orgs[int(u["id"])])
                }
            )
            yield ListedGroup(
                principal_for_group(self._source_id, f"segment:{segment['id']}"),
                members,
                display_name=str(segment.get("name") or segment["id"]),
            )


def _live(user: dict[str, Any]) -> bool:
    return bool(user.get("active", True)) and not user.get("suspended") and bool(user.get("email"))


def _matches(
    segment: dict[str, Any], user: dict[str, Any], groups: set[int], orgs: set[int]
) -> bool:
    """Whether ``user`` is in ``segment``, by the segment's documented rule."""
    if int(user["id"]) in {int(i) for i in segment.get("added_user_ids") or []}:
        return True
    if segment.get("user_type") == "staff" and user.get("role") not in STAFF:
        return False
    tags = set(user.get("tags") or [])
    if not set(segment.get("tags") or []) <= tags:
        return False
    if segment.get("or_tags") and not tags & set(segment["or_tags"]):
        return False
    if segment.get("group_ids") and not groups & {int(g) for g in segment["group_ids"]}:
        return False
    return not (
        segment.get("organization_ids") and not orgs & {int(o) for o in segment["organization_ids"]}
    )
