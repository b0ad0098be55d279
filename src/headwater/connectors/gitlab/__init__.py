"""The ``gitlab`` connector: a branch's files, issues, merge requests and wiki pages.

Files are listed from the branch's tree and then followed by commit compare; issues and
merge requests by ``updated_after``; readers from project visibility, members (Reporter
or above) and groups, with parent groups nested for expansion. See docs/connectors/gitlab.md.
"""

from headwater.connectors.gitlab._acl import principal_for_group
from headwater.connectors.gitlab._connector import GitlabConnector
from headwater.connectors.gitlab._options import GitlabOptions

__all__ = ["GitlabConnector", "GitlabOptions", "principal_for_group"]
