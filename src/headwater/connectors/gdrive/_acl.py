"""Drive permissions → ``Access``: the one place that names principals for this source.

A ``user`` permission is the user's email; ``group`` and ``domain`` permissions become
group principals prefixed by the source id (``principal_for_group``, ``principal_for_domain``)
so that a later group sync can map them; ``anyone`` makes the file public. Every role
(reader, commenter, writer, owner…) can read, so roles are not distinguished. A group is
named by its email: Drive lists no group directory, so its principal is the one callers
pass (``--group``); the email is lowercased only once ``fold_identity`` accepts it (a
look-alike stays as written, and the gate refuses the file naming it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from headwater.connectors.gdrive._client import DriveClient
from headwater.types import Access, fold_identity


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of a Google group (its email) in this source."""
    return f"{source_id}:group:{fold_identity(name, 'user')}"


def principal_for_domain(source_id: str, domain: str) -> str:
    """The principal of every user of one Google Workspace domain."""
    return f"{source_id}:domain:{fold_identity(domain, 'user')}"


def access_from_permissions(source_id: str, permissions: Iterable[Mapping[str, Any]]) -> Access:
    """The Access of a file from its Drive ``permissions`` resources."""
    users: set[str] = set()
    groups: set[str] = set()
    public = False
    for permission in permissions:
        if permission.get("deleted"):
            continue
        kind = permission.get("type")
        email = str(permission.get("emailAddress") or "")
        if kind == "user" and email:
            users.add(email)
        elif kind == "group" and email:
            groups.add(principal_for_group(source_id, email))
        elif kind == "domain" and permission.get("domain"):
            groups.add(principal_for_domain(source_id, str(permission["domain"])))
        elif kind == "anyone":
            public = True
    return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)), public=public)


def file_access(client: DriveClient, source_id: str, file: Mapping[str, Any]) -> Access | None:
    """From the file's permissions; items in shared drives need permissions.list (the
    file resource leaves them out). None: the token cannot see who shares it (the
    source's ``access`` applies)."""
    permissions = file.get("permissions")
    if permissions is None and file.get("driveId"):
        permissions = []
        page: str | None = None
        while True:
            params = {"supportsAllDrives": "true", "fields": "nextPageToken,permissions"}
            if page:
                params["pageToken"] = page
            body = client.json(f"/drive/v3/files/{file['id']}/permissions", params)
            permissions.extend(body.get("permissions", []))
            page = body.get("nextPageToken")
            if not page:
                break
    if permissions is None:
        return None
    return access_from_permissions(source_id, permissions)
