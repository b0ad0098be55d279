"""Drive's targeted read: named files read again by ``files.get``, without a listing.

Each id is asked with ``files.get`` and the listing's fields (a shared drive item's
permissions by ``permissions.list``, as in a run), and becomes the same document a run
makes; its content is fetched lazily. ``Deleted`` only when Drive confirms: a 404 (the
file was deleted, or is no longer shared with the token: a listing would not show it
either) or ``trashed``. A file outside ``shared_drives``, a folder or a type no parser
reads yields nothing (the hint is dropped; the next run decides).
https://developers.google.com/drive/api/reference/rest/v3/files/get
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from headwater.connectors.gdrive._client import FILE_FIELDS, DriveClient, raise_for_status
from headwater.types import Deleted, SourceItem


class _DriveReader(Protocol):
    """What the targeted read uses of the connector (``_connector.GdriveConnector``)."""

    options: Any  # GdriveOptions
    _client: DriveClient

    def _selected(self, file: dict[str, Any]) -> bool: ...
    def _document(self, file: dict[str, Any]) -> SourceItem: ...


def refetch(conn: _DriveReader, object_ids: Sequence[str]) -> Iterator[SourceItem]:
    """The current state of each selected file of ``object_ids``."""
    for file_id in object_ids:
        if not file_id or "/" in file_id:
            continue
        path = f"/drive/v3/files/{file_id}"
        response = conn._client.get(path, {"supportsAllDrives": "true", "fields": FILE_FIELDS})
        if response.status_code == 404:
            yield Deleted(file_id)
            continue
        raise_for_status(response, path)
        file = response.json()
        drive = str(file.get("driveId") or "")
        if conn.options.shared_drives and drive not in conn.options.shared_drives:
            continue
        if file.get("trashed"):
            yield Deleted(file_id)
        elif conn._selected(file):
            yield conn._document(file)
