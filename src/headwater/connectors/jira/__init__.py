"""The ``jira`` connector: issues of Jira Cloud projects with description and comments.

Listed with JQL (content fetched lazily when ``updated`` moved), windowed by ``updated``,
deletes by enumeration, ACLs from the permission scheme and issue security levels. See
docs/connectors/jira.md.
"""

from headwater.connectors.jira._acl import principal_for_group
from headwater.connectors.jira._connector import JiraConnector, JiraOptions

__all__ = ["JiraConnector", "JiraOptions", "principal_for_group"]
