"""Slack channel membership → principals: the one place that names them for this source.

A public channel is readable by every member of the workspace: the group principal
``{source_id}:workspace`` (``groups()`` lists its members). A private channel is readable
by its members: their emails (``users.info``, scope ``users:read.email``).
https://api.slack.com/methods/conversations.members
"""

from __future__ import annotations


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal ``{source_id}:{name}`` (``workspace`` is the only group yet)."""
    return f"{source_id}:{name}"


def workspace_principal(source_id: str) -> str:
    """Everyone in the workspace: the principal of public channels."""
    return principal_for_group(source_id, "workspace")
