"""The ``sharepoint`` connector: files in a SharePoint site's document libraries, through
Microsoft Graph ``delta``.

Object ids are ``{drive id}/{item id}``, version hints are ``cTag`` (changes with the
content only); the saved ``deltaLink`` of each library is the cursor, a 410 starts the
library over. See docs/connectors/sharepoint.md.
"""

from headwater.connectors.sharepoint._acl import access_from_permissions, principal_for_group
from headwater.connectors.sharepoint._connector import SharepointConnector, SharepointOptions

__all__ = [
    "SharepointConnector",
    "SharepointOptions",
    "access_from_permissions",
    "principal_for_group",
]
