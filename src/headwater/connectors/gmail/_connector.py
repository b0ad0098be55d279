"""The Gmail connector: the messages of configured Workspace users, by label.

A service account with domain-wide delegation acts as each user. The first run of a
mailbox notes its ``historyId`` (``users.getProfile``), then lists its messages
(``users.messages.list``, optionally of one label), a checkpoint after every page; later
runs ask ``users.history.list`` from the saved ``historyId`` for ``messageAdded``,
``messageDeleted`` and, with a label, ``labelAdded``/``labelRemoved`` of that label. A
``historyId`` Gmail no longer keeps (404: history lasts about a week) lists the mailbox
again. Messages are immutable: the version is the message id and the raw RFC 822 message
(``format=raw``) is fetched once, parsed as email. Readers: the mailbox's owner, plus the
delegates configured for it. Deletes: the history's ``messagesDeleted`` and a removed
label, and ``enumerate()``. See docs/connectors/gmail.md.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, SecretStr

from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.gmail._auth import DelegatedKey
from headwater.connectors.gmail._client import GmailClient, MissingAtServer
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
    Access,
    Checkpoint,
    Deleted,
    KnownVersions,
    SourceDocument,
    SourceItem,
    Window,
)

SKIPPED = frozenset({"DRAFT", "SPAM", "TRASH"})
HISTORY_TYPES = ["messageAdded", "messageDeleted", "labelAdded", "labelRemoved"]


class GmailOptions(ConnectorOptions):
    """The keys of a ``gmail`` source."""

    service_account_json: SecretStr | None = None
    service_account_file: str | None = None
    users: list[str] = Field(min_length=1)
    label: str | None = None  # a label id (INBOX, Label_12…); None: all mail but spam/trash
    delegates: dict[str, list[str]] = Field(default_factory=dict)  # mailbox -> more readers
    api_url: str = Field(default="https://gmail.googleapis.com", pattern=r"^https?://")
    token_uri: str | None = None  # default: the key's token_uri
    page_size: int = Field(default=100, ge=1, le=500)
    timeout: float = Field(default=30.0, gt=0)
    retry_attempts: int = Field(default=6, ge=1)
    retry_initial_wait: float = Field(default=1.0, ge=0)
    retry_max_wait: float = Field(default=120.0, ge=0)


def _key(options: GmailOptions, root: Path | None) -> DelegatedKey:
    given = [options.service_account_json is not None, options.service_account_file is not None]
    if sum(given) != 1:
        raise ConfigError(
            "gmail source: set exactly one of `service_account_json`, `service_account_file`; "
            "expected the service account's JSON key"
        )
    if options.service_account_json is not None:
        text = options.service_account_json.get_secret_value()
    else:
        path = Path(str(options.service_account_file)).expanduser()
        path = path if path.is_absolute() or root is None else root / path
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(
                f"gmail `service_account_file` {str(path)!r} cannot be read ({exc.strerror}); "
                "expected the JSON key file; fix the path"
            ) from exc
    return DelegatedKey(text, token_uri=options.token_uri)


class GmailConnector:
    """Reads the messages of the configured mailboxes."""

    type_name: ClassVar[str] = "gmail"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[GmailOptions]] = GmailOptions

    def __init__(self, options: GmailOptions, context: SourceContext) -> None:
        self.options = options
        key = _key(options, context.config_root)
        self._client = GmailClient(
            options.api_url,
            key,
            timeout=options.timeout,
            user_agent=context.user_agent,
            # the service account is the credential Google's quotas count against
            transport=governed_transport(context, "gmail", key.email),
            policy=RetryPolicy(
                attempts=options.retry_attempts,
                initial_wait=options.retry_initial_wait,
                max_wait=options.retry_max_wait,
            ),
        )

    def validate(self) -> None:
        """Act as each user once and read the mailbox's profile, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            for user in self.options.users:
                self._client.get(user, "profile", policy=once)
        except TransientError as exc:
            raise TransientError(
                f"gmail `api_url` {self.options.api_url}: {exc}; expected the Gmail API "
                "answering there; try again later"
            ) from exc

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield each mailbox's messages (first run) or its history since the saved id."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        saved: dict[str, str] = state.get("users", {})
        done: dict[str, str] = dict(state.get("done", {}))
        at: dict[str, Any] = state.get("at") or {}
        for index, user in enumerate(self.options.users):
            if at and index < at["user"]:
                continue
            here = at if at and index == at["user"] else {}
            mode = here.get("mode") or ("history" if saved.get(user) else "list")

            def spot(extra: dict[str, Any], i: int = index) -> Checkpoint:
                body = {"users": saved, "done": done, "at": {"user": i} | extra}
                return Checkpoint(json.dumps(body))

            if mode == "history":
                try:
                    done[user] = yield from self._history(user, here, saved, spot)
                    continue
                except MissingAtServer:
                    here = {}  # the saved historyId is too old: list the mailbox again
            done[user] = yield from self._list(user, here, spot)
        return Checkpoint(json.dumps({"users": saved | done}, sort_keys=True))

    def _list(self, user: str, here: dict[str, Any], spot: Any) -> Generator[SourceItem, None, str]:
        latest = here.get("latest") or str(self._client.get(user, "profile")["historyId"])
        page = here.get("page") if here.get("mode") == "list" else None
        while True:
            params: dict[str, Any] = {"maxResults": self.options.page_size}
            if self.options.label:
                params["labelIds"] = self.options.label
            if page:
                params["pageToken"] = page
            answer = self._client.get(user, "messages", params)
            for message in answer.get("messages") or []:
                yield self._document(user, str(message["id"]))
            page = answer.get("nextPageToken")
            if not page:
                return latest
            yield spot({"mode": "list", "page": page, "latest": latest})

    def _history(
        self, user: str, here: dict[str, Any], saved: dict[str, str], spot: Any
    ) -> Generator[SourceItem, None, str]:
        start = here.get("start") or saved[user]
        page = here.get("page")
        while True:
            params: dict[str, Any] = {"startHistoryId": start, "historyTypes": HISTORY_TYPES}
            params["maxResults"] = self.options.page_size  # every label: filtered here
            if page:
                params["pageToken"] = page
            answer = self._client.get(user, "history", params)
            for record in answer.get("history") or []:
                yield from self._changes(user, record)
            page = answer.get("nextPageToken")
            if not page:
                return str(answer.get("historyId") or start)
            yield spot({"mode": "history", "start": start, "page": page})

    def _changes(self, user: str, record: dict[str, Any]) -> Iterator[SourceItem]:
        label = self.options.label
        for added in record.get("messagesAdded") or []:
            if self._wanted(added["message"]):
                yield self._document(user, str(added["message"]["id"]))
        for gone in record.get("messagesDeleted") or []:
            if not label or label in (gone["message"].get("labelIds") or []):
                yield Deleted(f"{user}/{gone['message']['id']}")
        for added in record.get("labelsAdded") or []:
            if label and label in (added.get("labelIds") or []) and self._wanted(added["message"]):
                yield self._document(user, str(added["message"]["id"]))
        for removed in record.get("labelsRemoved") or []:
            if label and label in (removed.get("labelIds") or []):
                yield Deleted(f"{user}/{removed['message']['id']}")

    def _wanted(self, message: dict[str, Any]) -> bool:
        labels = set(message.get("labelIds") or [])
        if self.options.label:
            return self.options.label in labels
        return not labels & SKIPPED

    def _document(self, user: str, mid: str) -> SourceDocument:
        readers = (user, *self.options.delegates.get(user, []))
        return SourceDocument(
            object_id=f"{user}/{mid}",
            locator=f"https://mail.google.com/mail/u/{user}/#all/{mid}",
            title="",  # the email parser takes the subject
            version=mid,  # a message never changes; its labels are not its content
            fetch_ref=f"{user}/{mid}",
            media_type="message/rfc822",
            metadata={"mailbox": user},
            access=Access(users=tuple(sorted(set(readers)))),
        )

    def fetch(self, ref: str) -> bytes:
        """The raw RFC 822 message."""
        user, mid = ref.split("/", 1)
        try:
            answer = self._client.get(user, f"messages/{mid}", {"format": "raw"})
        except MissingAtServer as exc:
            raise ItemError("not_found", f"gmail message {mid} of {user} is gone: {exc}") from exc
        raw = str(answer.get("raw", ""))
        return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))

    def enumerate(self) -> Iterator[str]:
        """Every message id of every mailbox (of the label); raises if a page fails."""
        for user in self.options.users:
            page: str | None = None
            while True:
                params: dict[str, Any] = {"maxResults": 500}
                if self.options.label:
                    params["labelIds"] = self.options.label
                if page:
                    params["pageToken"] = page
                answer = self._client.get(user, "messages", params)
                yield from (f"{user}/{m['id']}" for m in answer.get("messages") or [])
                page = answer.get("nextPageToken")
                if not page:
                    break
