"""Teams membership → principals: the one place that names them for this source.

A standard channel is open to the team's members: the group principal of the team (its
Microsoft 365 group id, as the sharepoint connector names Entra groups). A private or a
shared channel is open only to its own members: a group principal of the channel. Both
are listed, with their members' emails, by ``groups()``; names are stable ids, never
display names. A channel whose ``membershipType`` is missing or unknown gets no
principal: its messages fail closed rather than guess.
https://learn.microsoft.com/en-us/graph/api/resources/channel
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.connectors.sharepoint import principal_for_group

OWN_MEMBERS = ("private", "shared")


def team_principal(source_id: str, team_id: str) -> str:
    """The group principal of a team's members (the team's group id)."""
    return principal_for_group(source_id, team_id)


def channel_principal(source_id: str, channel_id: str) -> str:
    """The group principal of a private or shared channel's own members."""
    return principal_for_group(source_id, f"channel:{channel_id}")


def audience(source_id: str, team_id: str, channel: Mapping[str, Any]) -> str | None:
    """The principal that may read a channel's messages; None when it cannot be told."""
    kind = channel.get("membershipType")
    if kind == "standard":
        return team_principal(source_id, team_id)
    if kind in OWN_MEMBERS:
        return channel_principal(source_id, str(channel["id"]))
    return None


def member_emails(members: list[dict[str, Any]]) -> list[str]:
    """The emails of conversation members (``aadUserConversationMember.email``)."""
    return sorted({str(m["email"]) for m in members if m.get("email")})
