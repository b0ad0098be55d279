"""The ``zendesk`` connector: Help Center articles, readers from their user segments.

Listed by the incremental article export (``start_time`` from the last ``end_time``),
drafts deleted, deletes by enumeration, user segments evaluated over the account's users
for ``groups()``. Tickets are not read. See docs/connectors/zendesk.md.
"""

from headwater.connectors.zendesk._acl import principal_for_group
from headwater.connectors.zendesk._connector import ZendeskConnector, ZendeskOptions

__all__ = ["ZendeskConnector", "ZendeskOptions", "principal_for_group"]
