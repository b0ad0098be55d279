"""The ``web`` connector: public web sites through sitemaps and crawls (see connector.py)."""

from headwater.connectors.web.connector import WebConnector, WebOptions

__all__ = ["WebConnector", "WebOptions"]
