"""The ``slack`` connector: channel messages through the Slack Web API.

One document per thread (root and replies, ``{channel}/thread/{ts}``) and one per
channel per UTC day for messages outside threads (``{channel}/{YYYY-MM-DD}``). The
checkpoint holds each channel's newest ``ts`` (``oldest`` of the next run) and the
threads and days inside the ``history_days`` horizon. See docs/connectors/slack.md.
"""

from headwater.connectors.slack._acl import principal_for_group, workspace_principal
from headwater.connectors.slack._connector import SlackConnector, SlackOptions

__all__ = ["SlackConnector", "SlackOptions", "principal_for_group", "workspace_principal"]
