"""The ``notion`` connector: the pages and database rows shared with an integration.

Listed by search on ``last_edited_time`` (newest first, stopping past the last run's
newest, with an overlap), blocks rendered to Markdown lazily, deletes by archive flags
and by enumeration, access from the source's ``access`` (the API exposes no page
permissions) and the workspace's members as a group. See docs/connectors/notion.md.
"""

from headwater.connectors.notion._connector import (
    NotionConnector,
    NotionOptions,
    principal_for_group,
)

__all__ = ["NotionConnector", "NotionOptions", "principal_for_group"]
