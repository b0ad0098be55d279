"""Graph item permissions → ``Access``: the one place that names principals for this source.

A permission grants to ``grantedToV2`` (user, group, siteUser, siteGroup) and, for
sharing links, to ``grantedToIdentitiesV2``; a link's ``scope`` is ``anonymous`` (anyone
with the link: public), ``organization`` (everyone in the tenant: the principal
``{source_id}:organization``) or ``users`` (only the identities listed). A permission
carrying only the deprecated ``grantedTo``/``grantedToIdentities`` is read from those. A
user is named by ``email``, else by the address in a claims ``loginName``. A group is named
by the directory's stable object ``id`` (a site group by ``site:{id}``), never by its mail or
display name: those can be changed and given to another group, which would then inherit
the first one's documents. A group identity without an id grants nobody. Names are passed
on as the source writes them; the gate normalizes them (``normalize_identity``).
https://learn.microsoft.com/en-us/graph/api/resources/permission
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from headwater.types import Access


def principal_for_group(source_id: str, group_id: str) -> str:
    """The group principal of an Entra ID group (its object id) or a SharePoint group
    (``site:{id}``)."""
    return f"{source_id}:group:{group_id}"


def group_name(group: Mapping[str, Any]) -> str:
    """How a group identity is named: its stable object id ("" when it has none). Its
    ``displayName`` and ``email``/``mail`` are labels only."""
    return str(group.get("id") or "")


def access_from_permissions(source_id: str, permissions: Iterable[Mapping[str, Any]]) -> Access:
    """The access that Graph ``permissions`` of an item grant."""
    users: set[str] = set()
    groups: set[str] = set()
    public = False
    for permission in permissions:
        link = permission.get("link") or {}
        scope = link.get("scope")
        if scope == "anonymous":
            public = True
        elif scope == "organization":
            groups.add(f"{source_id}:organization")
        for identity in _identities(permission):
            for key in ("user", "siteUser"):
                email = _email(identity.get(key) or {})
                if email:
                    users.add(email)
            if group_id := group_name(identity.get("group") or {}):
                groups.add(principal_for_group(source_id, group_id))
            if site_group := group_name(identity.get("siteGroup") or {}):
                groups.add(principal_for_group(source_id, f"site:{site_group}"))
    return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)), public=public)


def _identities(permission: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Who a permission grants to: ``grantedToV2`` and ``grantedToIdentitiesV2``, else the
    deprecated ``grantedTo`` and ``grantedToIdentities`` that some answers still carry alone."""
    found = [permission.get("grantedToV2") or {}]
    found += list(permission.get("grantedToIdentitiesV2") or [])
    if not any(found):
        found = [permission.get("grantedTo") or {}]
        found += list(permission.get("grantedToIdentities") or [])
    return [identity for identity in found if isinstance(identity, Mapping)]


def _email(identity: Mapping[str, Any]) -> str | None:
    """An identity's email, else the one in a SharePoint claims login name
    (``i:0#.f|membership|ann@contoso.com``)."""
    email = str(identity.get("email") or "")
    login = str(identity.get("loginName") or "")
    if not email and "|" in login and "@" in login.rsplit("|", 1)[1]:
        email = login.rsplit("|", 1)[1]
    return email or None
