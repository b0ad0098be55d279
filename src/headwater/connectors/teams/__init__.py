"""The ``teams`` connector: Microsoft Teams channel messages with their replies, through
Microsoft Graph channel message ``delta``.

One document per thread (a root message and its replies), object id
``{team}/{channel}/{message}``; each channel's saved ``deltaLink`` is its cursor,
``@removed`` rows are deletes, a link Graph no longer keeps starts the channel over.
Readers are the channel's audience: the team's members for a standard channel, the
channel's own members for a private or shared one, both listed by ``groups()``. See
docs/connectors/teams.md.
"""

from headwater.connectors.teams._acl import channel_principal, team_principal
from headwater.connectors.teams._connector import TeamsConnector, TeamsOptions

__all__ = ["TeamsConnector", "TeamsOptions", "channel_principal", "team_principal"]
