"""The ``dropbox`` connector: the files under a folder of one account or team member.

Listed with ``files/list_folder`` and followed with its cursor (deletes as ``deleted``
entries, a reset cursor relists), files downloaded by rev, readers from shared folder
members or the owner, team groups for ``groups()``. See docs/connectors/dropbox.md.
"""

from headwater.connectors.dropbox._connector import (
    DropboxConnector,
    DropboxOptions,
    principal_for_group,
)

__all__ = ["DropboxConnector", "DropboxOptions", "principal_for_group"]
