"""The ``gdrive`` connector: files in Google Drive (My Drive and shared drives), Drive API v3.

Object ids are Drive file ids, version hints are ``md5Checksum`` (binary files) or
``modifiedTime`` (Google Docs, Sheets, Slides, exported to text); the first run lists
every file after saving a ``startPageToken`` and later runs read ``changes.list`` from it.
See docs/connectors/gdrive.md.
"""

from headwater.connectors.gdrive._acl import access_from_permissions, principal_for_group
from headwater.connectors.gdrive._connector import GdriveConnector
from headwater.connectors.gdrive._options import GdriveOptions

__all__ = ["GdriveConnector", "GdriveOptions", "access_from_permissions", "principal_for_group"]
