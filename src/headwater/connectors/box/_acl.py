"""Box collaborations → principals: the one place that names them for this source.

A collaboration grants its ``accessible_by``: a user (named by ``login``, their email) or
a group (named by its stable id, never its name: names change and can be reused). Only
``accepted`` collaborations grant: a ``pending`` invitee cannot open the item yet.
https://developer.box.com/reference/resources/collaboration
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def principal_for_group(source_id: str, group_id: str) -> str:
    """The group principal of the Box group ``group_id``."""
    return f"{source_id}:group:{group_id}"


def grants(
    source_id: str, collaborations: Iterable[Mapping[str, Any]]
) -> tuple[set[str], set[str]]:
    """(user emails, group principals) that accepted ``collaborations`` grant."""
    users: set[str] = set()
    groups: set[str] = set()
    for collaboration in collaborations:
        if collaboration.get("status") != "accepted":
            continue
        who = collaboration.get("accessible_by") or {}
        if who.get("type") == "user" and who.get("login"):
            users.add(str(who["login"]))
        elif who.get("type") == "group" and who.get("id"):
            groups.add(principal_for_group(source_id, str(who["id"])))
    return users, groups
