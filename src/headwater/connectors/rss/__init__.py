"""The ``rss`` connector: RSS and Atom feed entries (see connector.py)."""

from headwater.connectors.rss.connector import RssConnector, RssOptions

__all__ = ["RssConnector", "RssOptions"]
