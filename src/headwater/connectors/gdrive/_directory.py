"""Google groups through the Admin SDK Directory API: ``groups()`` of a ``gdrive`` source.

Drive names a group in a file's permissions by its email only, so a listed group's
principal is that email (``principal_for_group``), exactly what the ACLs hold. The
groups of ``groups_domain`` are listed (``groups.list?domain=``), each with its direct
members (``members.list``): a member of type ``USER`` is a user by email, one of type
``GROUP`` a nested group (``ListedGroup.subgroups``; its members are the outer group's
members too, expanded at search), and a nested group outside the domain is listed too
when the directory lets the token see it. ``CUSTOMER`` members (everyone in the account)
and suspended members are left out: fail closed. Every list is paged by ``pageToken``.
References: https://developers.google.com/admin-sdk/directory/reference/rest/v1/groups/list
and https://developers.google.com/admin-sdk/directory/reference/rest/v1/members/list.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from headwater.connectors.gdrive._acl import principal_for_group
from headwater.connectors.gdrive._client import SCOPE_REASONS, DriveClient, error_reason
from headwater.errors import CredentialError, ItemError
from headwater.retry import RetryPolicy
from headwater.types import ListedGroup

GROUP_SCOPE = "https://www.googleapis.com/auth/admin.directory.group.readonly"
ROOT = "/admin/directory/v1"
PAGE = "200"  # the most either list answers per page


class DirectoryGroups:
    """The groups of one Workspace domain, with their members and nested groups."""

    def __init__(self, client: DriveClient, source_id: str, domain: str) -> None:
        self._client = client
        self._source_id = source_id
        self._domain = domain

    def check(self) -> None:
        """One page of one group, without retries: names a missing scope or role."""
        self._json(f"{ROOT}/groups", {"domain": self._domain, "maxResults": "1"}, once=True)

    def groups(self) -> Iterator[ListedGroup]:
        """Every group of the domain (and nested groups outside it), with direct members."""
        listed = list(self._pages(f"{ROOT}/groups", {"domain": self._domain}, "groups"))
        pending = sorted(listed, key=lambda g: str(g.get("email", "")).lower())
        seen: set[str] = set()
        while pending:
            group = pending.pop(0)
            email = str(group.get("email") or "")
            principal = principal_for_group(self._source_id, email)
            if not email or principal in seen:
                continue
            seen.add(principal)
            members = self._members(email, outside=group.get("id") is None)
            if members is None:
                continue  # a nested group outside the domain the token may not read
            users = sorted({str(m["email"]) for m in members if _is(m, "USER")})
            nested = sorted({str(m["email"]) for m in members if _is(m, "GROUP")})
            pending.extend({"email": e} for e in nested)
            yield ListedGroup(
                principal,
                users,
                display_name=str(group["name"]) if group.get("name") else None,
                mail=email,
                subgroups=[principal_for_group(self._source_id, e) for e in nested],
            )

    def _members(self, email: str, *, outside: bool) -> list[dict[str, Any]] | None:
        path = f"{ROOT}/groups/{quote(email, safe='@')}/members"
        try:
            return list(self._pages(path, {}, "members"))
        except (ItemError, CredentialError):
            if outside:  # another domain's group (403), or one gone since it was named
                return None  # the domain's own groups were listed: not a missing scope
            raise

    def _pages(self, path: str, params: dict[str, str], key: str) -> Iterator[dict[str, Any]]:
        token = ""
        while True:
            query = params | {"maxResults": PAGE} | ({"pageToken": token} if token else {})
            body = self._json(path, query)
            yield from (row for row in body.get(key) or [] if isinstance(row, dict))
            token = str(body.get("nextPageToken") or "")
            if not token:
                return

    def _json(self, path: str, params: dict[str, str], *, once: bool = False) -> dict[str, Any]:
        response = self._client.get(path, params, policy=RetryPolicy(attempts=1) if once else None)
        status = response.status_code
        if status == 200:
            body = response.json()
            return body if isinstance(body, dict) else {}
        reason, message = error_reason(response)
        if status == 401:
            raise CredentialError(
                f"gdrive `token` was rejected by the Directory API {path} (HTTP 401: "
                f"{message or reason}); expected a valid access token; issue a new one"
            )
        if status == 403 and reason in SCOPE_REASONS:
            raise CredentialError(
                f"gdrive `groups_domain` needs the scope {GROUP_SCOPE}, which `token` lacks "
                f"({path}: HTTP 403 {reason}); grant it to the OAuth client or service "
                "account (domain-wide delegation) and issue a new token, or remove "
                "`groups_domain`"
            )
        if status == 403:
            raise CredentialError(
                f"gdrive `groups_domain` {self._domain!r}: the Directory API refused {path} "
                f"(HTTP 403: {message or reason}); expected an account that may read the "
                "domain's groups; act as an administrator with the Groups Reader role, or "
                "fix the domain"
            )
        raise ItemError(
            "not_found" if status == 404 else f"http_{status}",
            f"Directory API {path} returned HTTP {status} ({reason}: {message}); expected 200",
            permanent=status in (400, 404),
        )


def _is(member: dict[str, Any], kind: str) -> bool:
    """An active member of ``kind`` with an email."""
    active = str(member.get("status", "ACTIVE")) != "SUSPENDED"
    return member.get("type") == kind and bool(member.get("email")) and active
