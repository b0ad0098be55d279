"""The ``servicenow`` connector: published Knowledge Base articles of chosen bases.

Listed from the Table API by ``sys_updated_on`` with an overlap, deletes by enumeration
of published articles, readers from knowledge base and article user criteria resolved to
people (users, groups, roles). See docs/connectors/servicenow.md.
"""

from headwater.connectors.servicenow._acl import principal_for_group
from headwater.connectors.servicenow._connector import ServicenowConnector, ServicenowOptions

__all__ = ["ServicenowConnector", "ServicenowOptions", "principal_for_group"]
