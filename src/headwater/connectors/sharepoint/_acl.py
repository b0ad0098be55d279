"""Graph item permissions → ``Access``: the one place that names principals for this source.

A permission grants to ``grantedToV2`` (user, group, siteUser, siteGroup) and, for
sharing links, to ``grantedToIdentitiesV2``; a link's ``scope`` is ``anonymous`` (anyone
with the link: public), ``organization`` (everyone in the tenant: the principal
``{source_id}:organization``) or ``users`` (only the identities listed).
https://learn.microsoft.com/en-us/graph/api/resources/permission
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from headwater.types import Access


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of an Entra ID / SharePoint group (its email, else its id)."""
    return f"{source_id}:group:{name.strip().lower()}"


def group_name(group: Mapping[str, Any]) -> str:
    """How a group identity is named: its email when it has one, else its id or name."""
    return str(group.get("email") or group.get("mail") or group.get("id") or "")


def access_from_permissions(source_id: str, permissions: Iterable[Mapping[str, Any]]) -> Access:
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
        identities = [permission.get("grantedToV2") or {}]
        identities += list(permission.get("grantedToIdentitiesV2") or [])
        for identity in identities:
            for key in ("user", "siteUser"):
                email = (identity.get(key) or {}).get("email")
                if email:
                    users.add(str(email).strip().lower())
            if identity.get("group"):
                groups.add(principal_for_group(source_id, group_name(identity["group"])))
            if identity.get("siteGroup"):
                name = str(identity["siteGroup"].get("displayName") or "")
                groups.add(principal_for_group(source_id, f"site:{name}"))
    return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)), public=public)
