"""The IMAP connector: one document per message, new messages found by UID.

A message's identity is ``<mailbox>/<UIDVALIDITY>/<UID>``: messages are immutable, so the
same string is the version hint, and flags are not content. The checkpoint keeps, per
mailbox, ``[uidvalidity, last_uid, max_message_bytes]``; a read asks ``UID SEARCH`` for the
UIDs above it (from 0 again after the limit was raised), so an unchanged mailbox costs
one ``EXAMINE`` and one ``SEARCH``, and no body is read. A
new UIDVALIDITY starts that mailbox from UID 0: every message gets a new id, and the old
ones disappear from ``enumerate()`` (the UIDs of every configured mailbox), which is how
deletes are found. Attachments, when enabled, are their own documents
(``<mailbox>/<uidvalidity>/<uid>/<part>``). A hint's targeted read (``refetch``) fetches
exactly the named UIDs, without a SEARCH.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import ClassVar

from pydantic import Field, SecretStr

from headwater.clock import iso
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
    versions_of,
)
from headwater.connectors.imap._client import ImapAddress, ImapSession
from headwater.connectors.imap._message import attachment_parts, parse_message
from headwater.types import (
    Checkpoint,
    Deleted,
    Failure,
    KnownVersions,
    MetadataValue,
    SourceDocument,
    SourceItem,
    Stage,
    Window,
)

log = logging.getLogger(__name__)

Cursor = dict[str, list[int]]  # mailbox -> [uidvalidity, last_uid, max_message_bytes]
MESSAGE_TAIL = re.compile(r"(\d+)/(\d+)(?:/(\d+(?:\.\d+)*))?")  # uidvalidity/uid[/part]


class ImapOptions(ConnectorOptions):
    """The keys of an ``imap`` source."""

    host: str = Field(min_length=1)
    port: int | None = Field(default=None, ge=1, le=65535)
    ssl: bool = True
    starttls: bool = False
    username: str = Field(min_length=1)
    password: SecretStr
    mailboxes: list[str] = Field(default_factory=lambda: ["INBOX"], min_length=1)
    attachments: bool = False
    batch_size: int = Field(default=50, ge=1, le=1000)
    max_message_bytes: int = Field(default=25 * 1024 * 1024, gt=0)
    timeout: float = Field(default=30.0, gt=0)


class ImapConnector:
    """Reads the messages of the configured mailboxes of one account."""

    type_name: ClassVar[str] = "imap"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=False
    )
    Options: ClassVar[type[ImapOptions]] = ImapOptions

    def __init__(self, options: ImapOptions, context: SourceContext) -> None:
        self.options = options
        self.context = context
        port = options.port or (993 if options.ssl else 143)
        self.address = ImapAddress(
            host=options.host,
            port=port,
            use_ssl=options.ssl,
            starttls=options.starttls and not options.ssl,
            username=options.username,
            password=options.password.get_secret_value(),
            timeout=options.timeout,
        )
        self.commands: Counter[str] = Counter()  # every IMAP command sent (a test seam)

    def _session(self) -> ImapSession:
        return ImapSession(self.address, self.commands)

    def validate(self) -> None:
        """Log in and open each configured mailbox once."""
        with self._session() as session:
            for mailbox in self.options.mailboxes:
                session.examine(mailbox)

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the mailboxes' messages newer than the checkpoint's UIDs; return the next."""
        cursor = _load(checkpoint)
        limit = self.options.max_message_bytes
        with self._session() as session:
            for mailbox in self.options.mailboxes:
                uidvalidity = session.examine(mailbox)
                held = cursor.get(mailbox)
                last = held[1] if held and held[0] == uidvalidity else 0
                if held and len(held) > 2 and held[2] < limit:
                    # A raised limit: messages refused as too_large lie below the cursor.
                    # Start over; known messages cost no FETCH (they are immutable).
                    last = 0
                uids = session.uids_after(last)
                size = self.options.batch_size
                for start in range(0, len(uids), size):
                    batch = uids[start : start + size]
                    yield from self._batch(session, mailbox, uidvalidity, batch, known)
                    cursor[mailbox] = [uidvalidity, batch[-1], limit]
                    yield Checkpoint(_dump(cursor))
                cursor[mailbox] = [uidvalidity, uids[-1] if uids else last, limit]
        return Checkpoint(_dump(cursor))

    def _batch(
        self,
        session: ImapSession,
        mailbox: str,
        uidvalidity: int,
        uids: list[int],
        known: KnownVersions,
    ) -> Iterator[SourceItem]:
        prefix = f"{mailbox}/{uidvalidity}"
        versions = versions_of(known, [f"{prefix}/{u}" for u in uids])  # one query a batch
        wanted = [u for u in uids if versions.get(f"{prefix}/{u}") != f"{prefix}/{u}"]
        sizes = {uid: line for uid, line, _ in session.fetch(wanted, "(RFC822.SIZE)")}
        small = [u for u in wanted if _size(sizes.get(u, b"")) <= self.options.max_message_bytes]
        bodies = {
            uid: literal
            for uid, _, literal in session.fetch(small, "(BODY.PEEK[])")
            if literal is not None
        }
        for uid in uids:
            object_id = f"{prefix}/{uid}"
            locator = f"imap://{self.address.where}/{mailbox};UIDVALIDITY={uidvalidity}/;UID={uid}"
            if uid not in wanted:  # immutable and already in the manifest: proven unchanged
                yield SourceDocument(
                    object_id=object_id, locator=locator, title="", version=object_id
                )
                continue
            raw = bodies.get(uid)
            if uid not in small:
                yield Failure(
                    object_id,
                    locator,
                    Stage.FETCH.value,
                    "too_large",
                    f"message is over max_message_bytes={self.options.max_message_bytes}; "
                    "raise `max_message_bytes` to index it",
                    permanent=True,
                )
                continue
            if raw is None:
                continue  # expunged between SEARCH and FETCH: it is not there any more
            yield from self._documents(object_id, locator, raw)

    def _documents(self, object_id: str, locator: str, raw: bytes) -> Iterator[SourceDocument]:
        message = parse_message(raw)
        metadata: dict[str, MetadataValue] = {
            "from": message.sender,
            "to": message.recipients,
            "subject": message.subject,
        }
        if message.date is not None:
            metadata["date"] = iso(message.date) or ""
        yield SourceDocument(
            object_id=object_id,
            locator=locator,
            title=message.subject,
            version=object_id,
            content=message.body,
            media_type=message.media_type,
            updated_at=message.date,
            metadata=metadata,
        )
        if not self.options.attachments:
            return
        for attachment in message.attachments:
            part_id = f"{object_id}/{attachment.part}"
            yield SourceDocument(
                object_id=part_id,
                locator=f"{locator}/;SECTION={attachment.part}",
                title=attachment.filename,
                version=part_id,
                content=attachment.data,
                media_type=attachment.media_type,
                updated_at=message.date,
                metadata={**metadata, "filename": attachment.filename, "message": object_id},
            )

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted | Failure]:
        """Each message (or attachment) of ``object_ids`` as it is now: per mailbox one
        ``EXAMINE``, one ``UID FETCH (RFC822.SIZE)`` of exactly the named UIDs and one of
        their bodies; no ``SEARCH``. ``Deleted`` when the server confirms the object is gone:
        the mailbox's UIDVALIDITY changed (every old UID is void), the UID FETCH answers
        nothing for the UID (expunged), or the message has no such attachment. An id of a
        mailbox this source does not read yields nothing."""
        wanted: dict[str, list[tuple[str, int, int]]] = {}
        for object_id in object_ids:
            mailbox = max((m for m in self.options.mailboxes if object_id.startswith(m + "/")),
                          key=len, default=None)  # fmt: skip
            found = MESSAGE_TAIL.fullmatch(object_id[len(mailbox) + 1 :]) if mailbox else None
            if (
                mailbox is None
                or found is None
                or (found.group(3) and not self.options.attachments)
            ):
                continue
            wanted.setdefault(mailbox, []).append(
                (object_id, int(found.group(1)), int(found.group(2)))
            )
        if not wanted:
            return
        with self._session() as session:
            for mailbox, items in wanted.items():
                yield from self._refetch_mailbox(session, mailbox, items)

    def _refetch_mailbox(
        self, session: ImapSession, mailbox: str, items: list[tuple[str, int, int]]
    ) -> Iterator[SourceDocument | Deleted | Failure]:
        uidvalidity = session.examine(mailbox)
        uids = sorted({uid for _, validity, uid in items if validity == uidvalidity})
        sizes = {uid: _size(line) for uid, line, _ in session.fetch(uids, "(RFC822.SIZE)")}
        small = [u for u in uids if u in sizes and sizes[u] <= self.options.max_message_bytes]
        bodies = {uid: raw for uid, _, raw in session.fetch(small, "(BODY.PEEK[])") if raw}
        for object_id, validity, uid in items:
            message_id = f"{mailbox}/{validity}/{uid}"
            locator = f"imap://{self.address.where}/{mailbox};UIDVALIDITY={validity}/;UID={uid}"
            if validity != uidvalidity or uid not in sizes:
                yield Deleted(object_id=object_id)
            elif uid not in small:
                yield Failure(object_id, locator, Stage.FETCH.value, "too_large",
                              f"message is over max_message_bytes="
                              f"{self.options.max_message_bytes}; raise `max_message_bytes` "
                              "to index it", permanent=True)  # fmt: skip
            elif uid not in bodies:
                yield Deleted(object_id=object_id)  # expunged between the two FETCHes
            else:
                docs = self._documents(message_id, locator, bodies[uid])
                doc = next((d for d in docs if d.object_id == object_id), None)
                yield doc if doc is not None else Deleted(object_id=object_id)

    def enumerate(self) -> Iterator[str]:
        """Every current message id (and attachment id) of every configured mailbox."""
        with self._session() as session:
            for mailbox in self.options.mailboxes:
                uidvalidity = session.examine(mailbox)
                uids = session.uids_after(0)
                size = self.options.batch_size
                for start in range(0, len(uids), size):
                    batch = uids[start : start + size]
                    parts = session.structures(batch) if self.options.attachments else {}
                    for uid in batch:
                        object_id = f"{mailbox}/{uidvalidity}/{uid}"
                        yield object_id
                        for part in attachment_parts(parts.get(uid, [])):
                            yield f"{object_id}/{part}"


def _size(line: bytes) -> int:
    marker = b"RFC822.SIZE "
    at = line.find(marker)
    if at < 0:
        return 0
    digits = line[at + len(marker) :].split(b")")[0].split()[0]
    return int(digits) if digits.isdigit() else 0


def _load(checkpoint: Checkpoint | None) -> Cursor:
    if checkpoint is None:
        return {}
    try:
        raw = json.loads(checkpoint.cursor)
    except ValueError:
        log.warning("imap: ignoring an unreadable checkpoint; reading every mailbox again")
        return {}
    cursor: Cursor = {}
    if isinstance(raw, dict):
        for mailbox, value in raw.items():
            if (
                isinstance(value, list)
                and len(value) in (2, 3)  # an older cursor has no max_message_bytes
                and all(isinstance(v, int) for v in value)
            ):
                cursor[str(mailbox)] = [int(v) for v in value]
    return cursor


def _dump(cursor: Cursor) -> str:
    return json.dumps(cursor, sort_keys=True)
