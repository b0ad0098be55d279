"""The ``github`` connector: issues and pull requests, with comments and review comments.

Listed by ``updated_at`` with ``since`` and ETag conditional requests (a 304 downloads
nothing), text fetched lazily, deletes by enumeration, ACL from repository visibility,
collaborators and teams. See docs/connectors/github.md.
"""

from headwater.connectors.github._acl import principal_for_group
from headwater.connectors.github._connector import GithubConnector, GithubOptions

__all__ = ["GithubConnector", "GithubOptions", "principal_for_group"]
