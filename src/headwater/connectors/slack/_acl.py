"""Slack channel membership → principals: the one place that names them for this source.

A public channel is readable by every member of the workspace: the group principal
``{source_id}:workspace`` (``groups()`` lists its members). A private channel is readable
by its members, each named by user id, ``slack:{id}`` (``login_identity``: ``slack:U123``,
lowercased like every user), and by the account's email where ``users.info`` shows it
(scope ``users:read.email``). A member without an email (a guest of another workspace in
a shared channel) is thus still a reader, never dropped and never a guessed email;
``[identity] aliases`` map ``slack:U123`` to a person at search time.
https://api.slack.com/methods/conversations.members
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.types import login_identity


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal ``{source_id}:{name}`` (``workspace`` is the only group yet)."""
    return f"{source_id}:{name}"


def user_names(user_id: str, record: Mapping[str, Any]) -> list[str]:
    """A member's names: ``slack:{id}``, and the profile's email where Slack shows one."""
    names = [login_identity("slack", user_id)]
    email = (record.get("profile") or {}).get("email")
    if email:
        names.append(str(email))
    return names


def workspace_principal(source_id: str) -> str:
    """Everyone in the workspace: the principal of public channels."""
    return principal_for_group(source_id, "workspace")
