"""The ``gmail`` connector: messages of Workspace users (domain-wide delegation), by label.

Listed once, then followed by ``history.list`` from the saved ``historyId`` (a full
resync when it expired); raw messages parsed as email; readers the mailbox owner and its
configured delegates. See docs/connectors/gmail.md.
"""

from headwater.connectors.gmail._connector import GmailConnector, GmailOptions

__all__ = ["GmailConnector", "GmailOptions"]
