"""The ``box`` connector: the files under one Box folder, parsed by the existing parsers.

A first run walks the folder (``/2.0/folders/{id}/items``, marker paging) after taking
the changes stream's position; later runs read the events stream from that position
(``/2.0/events?stream_type=changes``), re-reading each changed file (a trashed or
moved-out file is a delete); a position Box no longer keeps relists. Readers: the file's
owner and its collaborators, on the file and inherited from every folder above it; Box
groups listed with their members. See docs/connectors/box.md.
"""

from headwater.connectors.box._acl import principal_for_group
from headwater.connectors.box._connector import BoxConnector, BoxOptions

__all__ = ["BoxConnector", "BoxOptions", "principal_for_group"]
