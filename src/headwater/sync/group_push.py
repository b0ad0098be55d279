"""Group push: memberships a push source (or an identity system that is not a connector)
sends through the API, versioned like pushed documents.

A pushed group ``NAME`` of source ``SOURCE`` is the principal ``SOURCE:group:NAME``,
namespaced by source as every connector's groups are, so a push key can never define
the members of another source's group. Members are emails, normalized by the one
normalization (a look-alike or padded address is refused, never folded). A group may
also hold other pushed groups of the same source (``subgroups``, by name): their members
are its members, transitively, cycles included, expanded at search from the same
``group_nesting`` edges as a listed group's subgroups, so an edge removed by the next
push of the group hides its documents at once. The version rules and the write are
``manifest.pushed_groups``; expansion at search reads the same ``group_members`` and
``group_nesting`` rows as for listed groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from headwater.errors import ConfigError
from headwater.manifest.pushed_groups import GroupPushResult, PushedGroups
from headwater.types import normalize_identity

MAX_MEMBERS = 100_000
MAX_SUBGROUPS = 10_000


def group_principal(source_id: str, group: str) -> str:
    """The principal of pushed group ``group`` of ``source_id`` (``SOURCE:group:NAME``)."""
    if not group or len(group) > 400 or "/" in group:
        raise ConfigError(
            f"group name {group[:80]!r} must have 1 to 400 characters and no '/'; "
            "name the group by its stable id in your directory"
        )
    return normalize_identity(f"{source_id}:group:{group}", "group")


def put_group(
    ledger: PushedGroups,
    source_id: str,
    group: str,
    members: Sequence[str],
    version: int,
    subgroups: Sequence[str] = (),
) -> GroupPushResult:
    """Make the pushed group's members exactly ``members`` and its subgroups (names of
    pushed groups of the same source) exactly ``subgroups``, at ``version``."""
    if len(members) > MAX_MEMBERS:
        raise ConfigError(
            f"group {group!r} has {len(members)} members; at most {MAX_MEMBERS} are taken "
            "in one request; split the directory into nested groups"
        )
    if len(subgroups) > MAX_SUBGROUPS:
        raise ConfigError(
            f"group {group!r} has {len(subgroups)} subgroups; at most {MAX_SUBGROUPS} are "
            "taken in one request; nest them one level deeper"
        )
    principal = group_principal(source_id, group)
    normalized = [normalize_identity(m, "user") for m in members]
    nested = [group_principal(source_id, g) for g in subgroups]
    result = ledger.put(source_id, principal, normalized, version, nested)
    return replace(result, name=group)


def delete_group(ledger: PushedGroups, source_id: str, group: str, version: int) -> GroupPushResult:
    """Delete the pushed group at ``version`` (older pushes of it are refused after)."""
    return replace(ledger.delete(source_id, group_principal(source_id, group), version), name=group)
