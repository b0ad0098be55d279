"""The ``imap`` connector: mailboxes read over IMAP, one document per message.

Object ids are ``<mailbox>/<UIDVALIDITY>/<UID>`` (also the version hint: messages are
immutable), new messages are found with ``UID SEARCH`` above the checkpoint, bodies are
read with ``BODY.PEEK`` (never setting ``\\Seen``), and deletes are found by
``enumerate()``. See docs/connectors/imap.md.
"""

from headwater.connectors.imap._connector import ImapConnector, ImapOptions

__all__ = ["ImapConnector", "ImapOptions"]
