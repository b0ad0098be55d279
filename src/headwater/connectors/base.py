"""The connector contract: a connector only reads its source.

A connector is a class with an ``Options`` pydantic model (its config keys, extra keys
forbidden) and a constructor ``(options, context)``. Its ``read`` is a generator that
yields ``SourceDocument | Deleted | Failure | Checkpoint`` and returns the checkpoint the
next run starts from. It never writes the manifest, never builds document ids and never
persists checkpoints: the sync runner does all of that.

Optional abilities are separate Protocols checked with ``isinstance``: ``Enumerating``
(a full snapshot of current object ids, used for deletes), ``LazyFetching`` (content
fetched only when the version gate says it may have changed) and ``Scoped`` (whether the
config still selects an object id, so a changed include/exclude is not mistaken for a
broken listing by the prune safety fraction), ``GroupListing`` (the source's groups and
their members, for expansion at search), ``PermissionListing`` (every object's current
ACL without its content, for ``headwater sync --permissions``), ``Refetching`` (the
current state of named objects, for the targeted read a hint asks for),
``ExpectingTotal`` (how many items the running listing holds, when the API says, for an
ETA) and ``Subscribing`` (creating and renewing the vendor's expiring change-notification
subscription, which the scheduler keeps alive).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from headwater.ratelimit import Governor
from headwater.types import (
    Access,
    Checkpoint,
    Deleted,
    Failure,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    SourceItem,
    Window,
)

ReadStream = Generator[SourceItem, None, Checkpoint | None]


class ConnectorOptions(BaseModel):
    """Base of every connector's options model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class ConnectorCapabilities:
    """What a connector does, as data.

    - ``windowed``: ``read`` honours the window (``start < updated_at <= end``).
    - ``full_listing``: a complete ``read`` lists every current object, so it doubles as
      an enumeration for deletes (the filesystem does this).
    """

    windowed: bool = False
    full_listing: bool = False


@dataclass(frozen=True)
class SourceContext:
    """What the core tells a connector about where it runs."""

    source_id: str
    state_dir: Path
    user_agent: str = "Headwater/0.1 (+https://github.com/headwater)"
    config_root: Path | None = None  # relative paths in options resolve against this
    # the rate-limit governor: SaaS clients send through it (connectors._governed)
    governor: Governor | None = None
    # the source's batch_size: the runner commits at a checkpoint once a batch holds this
    # many items, so a connector of many small items may yield a checkpoint only this often
    checkpoint_every: int = 1


@runtime_checkable
class Connector(Protocol):
    """Every connector."""

    type_name: ClassVar[str]
    capabilities: ClassVar[ConnectorCapabilities]

    def validate(self) -> None:
        """A light probe; raises ConfigError, CredentialError or TransientError."""
        ...

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield items in a stable order; return the next run's starting checkpoint."""
        ...


@runtime_checkable
class Enumerating(Protocol):
    """A connector that can list every current object id (a full snapshot)."""

    def enumerate(self) -> Iterator[str]:
        """Every current object id of the source."""


@runtime_checkable
class ExpectingTotal(Protocol):
    """A connector whose API says how many items a listing holds (a total count header
    or field): the runner shows an ETA from it while the sync runs."""

    def expected_total(self) -> int | None:
        """Items the running ``read`` expects to yield in all, once the API said (None:
        not known yet, or the API gives no total)."""


@runtime_checkable
class Scoped(Protocol):
    """A connector whose config selects objects (include/exclude, prefixes, URL scope).

    ``in_scope(object_id)`` is False for an id the current config leaves out: the runner
    deletes such documents with reason ``excluded_by_config`` and does not count them
    against ``prune_max_fraction``.
    """

    def in_scope(self, object_id: str) -> bool:
        """Whether the current config selects ``object_id``."""


@runtime_checkable
class LazyFetching(Protocol):
    """A connector whose documents may carry a ``fetch_ref`` instead of content."""

    def fetch(self, ref: str) -> bytes:
        """The content of the object a document's ``fetch_ref`` names."""


@runtime_checkable
class GroupListing(Protocol):
    """A connector that can list its source's groups and their members.

    ``groups()`` yields a ``ListedGroup`` per group (or, from older connectors, a plain
    ``(group principal, member emails)`` pair); the group principal is the one the
    connector writes into ACLs (namespaced by source id, ``principal_for_group``), so a
    group ``eng`` of one source is never ``eng`` of another, and names the group by the
    directory's stable id where it has one (never a mail or display name, which can be
    reassigned to another group: those go in ``display_name`` and ``mail``, labels shown
    to people and never compared). Member emails are passed on as the source writes them:
    the ledger normalizes them and refuses one that could pass as another. The listing is
    complete: after it the manifest holds exactly these memberships for the source.
    """

    def groups(self) -> Iterator[ListedGroup | tuple[str, list[str]]]:
        """Each group of the source with its members' emails (and labels, subgroups)."""


def lists_groups(connector: object) -> bool:
    """Whether ``connector`` lists groups: a ``GroupListing`` whose optional
    ``lists_groups`` attribute is not False (a connector whose listing depends on its
    options, as gdrive's on ``groups_domain``, says so there)."""
    return isinstance(connector, GroupListing) and bool(getattr(connector, "lists_groups", True))


@runtime_checkable
class PermissionListing(Protocol):
    """A connector that can list every object's current ACL without reading content.

    ``permissions()`` yields ``(object_id, Access)``; a permission sync writes the ACLs
    that changed as ACL-only revisions (no fetch, no parse, no embedding).
    """

    def permissions(self) -> Iterator[tuple[str, Access]]:
        """Each object id with its current ACL."""


@runtime_checkable
class Refetching(Protocol):
    """A connector that can read named objects again: the targeted read of a hint.

    ``refetch(object_ids)`` yields, for each id the config selects, exactly one item: a
    ``SourceDocument`` with the object's current version, content (or ``fetch_ref``) and
    ACL when it exists; ``Deleted`` only when the source *confirms* it is gone (a 404, a
    missing file), never on an error; a ``Failure`` when it cannot tell (the object then
    counts as present). An id the config does not select yields nothing (the hint is
    dropped and counted). The runner puts the items through the same gates, batch commit
    and lease fencing as a sync.
    """

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted | Failure]:
        """The current state of each selected object of ``object_ids``."""


@dataclass(frozen=True)
class Subscription:
    """A change-notification subscription as the vendor granted it."""

    scope: str  # what it watches: a library's drive id, a Drive scope ("" or a drive id)
    vendor_id: str  # the Graph subscription id, the Drive channel id
    resource_id: str  # Drive's resourceId of the channel ("" for Graph)
    expires_at: datetime


@runtime_checkable
class Subscribing(Protocol):
    """A connector whose vendor pushes change notifications to ``notification_url``
    through a subscription that expires (Graph subscriptions, Drive push channels).

    The scheduler (``hints.subscriptions``) calls ``subscribe`` for each scope that has
    none, and ``renew`` before the current one expires; the webhook's deliveries carry
    ``secret`` (Graph's ``clientState``, Drive's channel ``token``). ``renew`` returns
    the subscription to keep: the same one extended, or a new one (the old one stopped).
    """

    def subscription_scopes(self) -> list[str]:
        """The scopes that each need a subscription."""

    def subscribe(self, scope: str, address: str, secret: str, now: datetime) -> Subscription:
        """A new subscription of ``scope`` delivering to ``address``."""

    def renew(
        self, current: Subscription, address: str, secret: str, now: datetime
    ) -> Subscription:
        """``current`` extended (or replaced, when the vendor lost it or cannot extend)."""


def versions_of(known: KnownVersions, object_ids: Sequence[str]) -> dict[str, str | None]:
    """``known`` of each of ``object_ids``, in one manifest query per 500 ids where the
    sync runner's ``KnownVersions`` answers many at once (``sync.known``), else one by one
    (a test's plain function)."""
    many = getattr(known, "many", None)
    if callable(many):
        return dict(many(object_ids))
    return {object_id: known(object_id) for object_id in object_ids}
