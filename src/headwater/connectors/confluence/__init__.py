"""The ``confluence`` connector: pages and blog posts of Confluence Cloud spaces.

Listed with CQL (bodies fetched lazily by version number), windowed by ``lastmodified``,
deletes by enumeration, ACLs from space permissions and page restrictions. See
docs/connectors/confluence.md.
"""

from headwater.connectors.confluence._acl import principal_for_group
from headwater.connectors.confluence._connector import ConfluenceConnector, ConfluenceOptions

__all__ = ["ConfluenceConnector", "ConfluenceOptions", "principal_for_group"]
