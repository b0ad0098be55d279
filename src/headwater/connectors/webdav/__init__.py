"""The ``webdav`` connector: files below a WebDAV collection, listed with PROPFIND.

Object ids are paths relative to the configured URL, version hints are ETags, content is
fetched lazily with GET, and a complete listing doubles as the enumeration for deletes.
See docs/connectors/webdav.md.
"""

from headwater.connectors.webdav._connector import WebdavConnector, WebdavOptions

__all__ = ["WebdavConnector", "WebdavOptions"]
