"""Domain types shared by every layer of Headwater.

Small frozen dataclasses cross module boundaries; dicts do not. A connector yields
``SourceDocument``, ``Deleted``, ``Failure`` and ``Checkpoint`` items; the core turns
them into manifest rows, ``Chunk`` objects and sink writes. Everything here is pure data.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Protocol

from headwater.errors import ConfigError

PUBLIC_PRINCIPAL = "public"

MetadataValue = str | list[str]


def normalize_identity(value: str, kind: Literal["user", "group"]) -> str:
    """The one normalization of an identity, for ACLs and callers alike.

    Distinct identities never collapse into one principal: an identity that NFKC would
    change (compatibility characters such as the KELVIN SIGN, fullwidth letters, ligatures),
    that holds control or format characters, that is empty or padded with whitespace, or a
    user with any whitespace, is rejected with a ``ConfigError``. A user (an email) is then
    lowercased, and one whose lowercase changes its length (U+0130) is rejected too; a
    group name is kept exactly as written (group names are case-sensitive).
    """
    fix = f"write the {kind} exactly as the source names it, in plain characters"
    if not value or value != value.strip():
        raise ConfigError(
            f"{kind} {value!r} is empty or has leading/trailing whitespace; expected a "
            f"non-empty name; {fix}."
        )
    folded = unicodedata.normalize("NFKC", value)
    if folded != value:
        raise ConfigError(
            f"{kind} {value!r} contains compatibility characters (NFKC reads it as "
            f"{folded!r}), so it could pass as another identity; {fix}."
        )
    spaces = " (spaces are allowed in group names)" if kind == "group" else ""
    for char in value:
        if unicodedata.category(char).startswith("C") or (
            char.isspace() and (kind == "user" or char != " ")
        ):
            raise ConfigError(
                f"{kind} {value!r} contains the character U+{ord(char):04X}; expected no "
                f"control, format or whitespace characters{spaces}; {fix}."
            )
    if kind == "group":
        return value
    lowered = value.lower()
    if len(lowered) != len(value):
        raise ConfigError(
            f"user {value!r} changes length when lowercased, so it could pass as another "
            f"identity; {fix}."
        )
    return lowered


def fold_identity(value: str, kind: Literal["user", "group"]) -> str:
    """``normalize_identity`` for a connector that must compare names before the gate.

    The normalized identity, or, when it is refused, the value unchanged: the gate then
    refuses the one document whose ACL names it (``invalid_principal``), and the run goes on.
    """
    try:
        return normalize_identity(value, kind)
    except ConfigError:
        return value


def login_identity(kind: str, login: str) -> str:
    """The user name of a source account known by a login or id, never by email.

    ``{kind}:{login}`` (``github:ann``, ``gitlab:ann``, ``slack:U123``): a name of its own
    kind, never a guessed email. It is a user like any other and goes through the same
    ``normalize_identity`` (validated, then lowercased: ``github:Ann`` is ``github:ann``),
    so an ``[identity] aliases`` entry ``"github:ann" = "ann@corp.com"`` lets the person
    search as it. A login holds no ``@``, so the name never equals an email.
    """
    return f"{kind}:{login}"


def user_principal(email: str) -> str:
    """The principal string of one user (emails compare case-insensitively)."""
    return f"user:{normalize_identity(email, 'user')}"


def group_principal(group: str) -> str:
    """The principal string of one group."""
    return f"group:{normalize_identity(group, 'group')}"


class ListedGroup(tuple[str, Sequence[str]]):
    """One group of a source's group listing: ``(principal, members)``, with labels.

    ``principal`` is the one the connector writes into ACLs, naming the group by the
    directory's stable id (``principal_for_group``); members are emails as the source
    writes them. ``display_name`` and ``mail`` are labels for people (``search
    --explain``): they can change or be given to another group, so nothing compares them.
    ``subgroups`` are the principals of groups nested in this one (their members are
    this group's members too, expanded transitively at search). It is the plain pair
    older connectors yield (it unpacks and compares as one), so listings with and
    without labels mix freely.
    """

    display_name: str | None
    mail: str | None
    subgroups: tuple[str, ...]

    def __new__(
        cls,
        principal: str,
        members: Sequence[str],
        display_name: str | None = None,
        mail: str | None = None,
        subgroups: Sequence[str] = (),
    ) -> ListedGroup:
        listed = super().__new__(cls, (principal, members))
        listed.display_name, listed.mail = display_name, mail
        listed.subgroups = tuple(subgroups)
        return listed

    @property
    def principal(self) -> str:
        """The group's principal, as written into ACLs."""
        return self[0]

    @property
    def members(self) -> Sequence[str]:
        """The members' emails, as the source writes them."""
        return self[1]

    def __getnewargs__(
        self,
    ) -> tuple[str, Sequence[str], str | None, str | None, tuple[str, ...]]:
        """The arguments that rebuild it (pickle, copy), labels and subgroups included."""
        return self.principal, self.members, self.display_name, self.mail, self.subgroups

    def __repr__(self) -> str:
        return (
            f"ListedGroup({self.principal!r}, {list(self.members)!r}, "
            f"display_name={self.display_name!r}, mail={self.mail!r}, "
            f"subgroups={self.subgroups!r})"
        )


@dataclass(frozen=True)
class Access:
    """Who may see a document. Empty means nobody (default deny, invariant 12)."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    public: bool = False

    @classmethod
    def nobody(cls) -> Access:
        """An access that lets nobody read."""
        return cls()

    def principals(self) -> list[str]:
        """Sorted principal strings; a document is visible when these meet the caller's."""
        found = {user_principal(u) for u in self.users}
        found |= {group_principal(g) for g in self.groups}
        if self.public:
            found.add(PUBLIC_PRINCIPAL)
        return sorted(found)

    def key(self) -> list[str]:
        """``principals()`` for comparing ACLs (version hints, checkpoints), never raising.

        An ACL naming an identity ``normalize_identity`` refuses is written raw (``!user:…``)
        instead: a connector hashing it goes on, and the gate refuses only that document.
        """
        try:
            return self.principals()
        except ConfigError:
            raw = [f"!user:{u}" for u in self.users] + [f"!group:{g}" for g in self.groups]
            return sorted(raw + ([PUBLIC_PRINCIPAL] if self.public else []))

    @classmethod
    def from_principals(cls, principals: Sequence[str]) -> Access:
        """The access that ``principals`` (``user:``, ``group:`` or public) grant."""
        users: list[str] = []
        groups: list[str] = []
        public = False
        for p in principals:
            if p == PUBLIC_PRINCIPAL:
                public = True
            elif p.startswith("user:"):
                users.append(p[5:])
            elif p.startswith("group:"):
                groups.append(p[6:])
        return cls(users=tuple(sorted(users)), groups=tuple(sorted(groups)), public=public)

    def is_empty(self) -> bool:
        """Whether nobody may read (no user, no group, not public)."""
        return not (self.users or self.groups or self.public)


def caller_principals(
    email: str | None, groups: Sequence[str] = (), aliases: Sequence[str] = ()
) -> list[str]:
    """The principals of a searching user: their email (and other names), their groups
    and PUBLIC."""
    found = [PUBLIC_PRINCIPAL]
    if email:
        found.append(user_principal(email))
    found.extend(user_principal(a) for a in aliases)
    found.extend(group_principal(g) for g in groups)
    return sorted(set(found))


@dataclass(frozen=True)
class Window:
    """A fixed time window of one run: ``start < updated_at <= end``; start None is open."""

    start: datetime | None
    end: datetime

    def contains(self, moment: datetime | None) -> bool:
        """True when ``moment`` falls in the window; an unknown time always does."""
        if moment is None:
            return True
        if self.start is not None and moment <= self.start:
            return False
        return moment <= self.end


@dataclass(frozen=True)
class Checkpoint:
    """An opaque, connector-defined cursor (usually JSON text).

    Yielded mid-stream it means: everything yielded before it is covered, a resumed run
    may start after it. Returned at the end it is the next run's starting cursor.
    """

    cursor: str


@dataclass(frozen=True)
class SourceDocument:
    """One object as a connector sees it.

    ``content`` holds the raw bytes when the connector already has them; otherwise
    ``fetch_ref`` is handed to the connector's ``fetch`` only if the version gate says the
    object may have changed. Neither set means the connector proved it unchanged (e.g. a
    304): the runner then requires the version hint to match the manifest.
    """

    object_id: str
    locator: str
    title: str
    version: str
    content: bytes | None = None
    fetch_ref: str | None = None
    media_type: str | None = None
    updated_at: datetime | None = None
    sequence: int | None = None
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    access: Access | None = None
    size: int | None = None  # bytes as listed (for sync rules); never stored

    @classmethod
    def of(cls, values: dict[str, Any]) -> SourceDocument:
        """``SourceDocument(**values)`` where ``values`` names every field, built without
        the frozen dataclass's ``__init__`` (one ``object.__setattr__`` a field, 1.6 µs):
        a listing of a million objects builds a million (tests/core/test_noop_fast_paths.py
        compares the two)."""
        doc = object.__new__(cls)
        doc.__dict__.update(values)
        return doc


@dataclass(frozen=True)
class Deleted:
    """An explicit delete reported by the source (git diff, change feed, HTTP 410).

    ``inferred`` marks a delete the connector concluded from an answer such as HTTP
    404/410 rather than one the source reported as a change; the runner counts those
    against ``prune_max_fraction`` like deletes found by set difference.
    """

    object_id: str
    sequence: int | None = None
    inferred: bool = False


class Stage(StrEnum):
    """Where in the pipeline a document failed."""

    ENUMERATE = "enumerate"
    FETCH = "fetch"
    PARSE = "parse"
    CHUNK = "chunk"
    EMBED = "embed"
    INDEX = "index"
    DELETE = "delete"


@dataclass(frozen=True)
class Failure:
    """One object that could not be read. It counts as present for delete detection.

    With ``prefix`` set, ``object_id`` names a folder (or key prefix) that could not be
    listed: the object itself and every known object under it (ids starting with
    ``object_id + "/"``, or with ``object_id`` when it already ends in ``/``) count as
    present, so nothing under an unreadable folder is deleted.
    """

    object_id: str
    locator: str
    stage: str
    error_class: str
    message: str
    permanent: bool = False
    prefix: bool = False
    document: SourceDocument | None = None
    """The object as far as it is known without its content (a container's member past
    its cap): the sync indexes it as a metadata-only document (``sync.unavailable``)."""

    def covers(self, object_id: str) -> bool:
        """Whether this failure makes ``object_id`` count as present."""
        if object_id == self.object_id:
            return True
        if not self.prefix:
            return False
        under = self.object_id if self.object_id.endswith("/") else self.object_id + "/"
        return object_id.startswith(under)


SourceItem = SourceDocument | Deleted | Failure | Checkpoint

# A counter of long work without a known total (prune enumeration, reconcile): called
# with a line name ("prune docs", "reconcile main"), the count so far, and True once the
# line's work is done. The CLI shows it as a progress row or a periodic log line.
CountProgress = Callable[[str, int, bool], None]
COUNT_EVERY = 100  # items between two calls


class KnownVersions(Protocol):
    """Lets a connector ask which version hint the manifest holds for an object.

    None: the manifest does not hold it. ``""``: it holds it but no hint may be trusted
    (``sync --full``): read it without a conditional request.
    """

    def __call__(self, object_id: str) -> str | None: ...


@dataclass(frozen=True)
class Chunk:
    """One piece of a document's normalized text, ready to embed."""

    chunk_id: str
    document_id: str
    ordinal: int
    text: str
    embed_text: str


@dataclass(frozen=True)
class IndexDocument:
    """What a sink needs to know of a document besides its chunks."""

    document_id: str
    source: str
    title: str
    locator: str
    access: Access
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)


@dataclass(frozen=True)
class EmbeddedChunk:
    """A chunk and its vector (None for sinks without vector capability)."""

    chunk: Chunk
    vector: Sequence[float] | None


class SearchMode(StrEnum):
    """How a search ranks: hybrid (both fused), vector or keyword."""

    HYBRID = "hybrid"
    VECTOR = "vector"
    KEYWORD = "keyword"


@dataclass(frozen=True)
class SearchHit:
    """One result chunk; ``text`` is the chunk's own text, not its embedded form."""

    chunk_id: str
    document_id: str
    ordinal: int
    score: float
    text: str
    title: str
    locator: str
    source: str

    @staticmethod
    def of_row(row: Sequence[Any]) -> SearchHit:
        """The hit of an index row ``(chunk_id, document_id, ordinal, score, text, title,
        locator, source)``; ordinal and score are converted to int and float. An index
        builds ~160 hits a search: the frozen ``__init__`` took 3.8 µs each, this 1.4."""
        chunk_id, document_id, ordinal, score, text, title, locator, source = row
        hit = object.__new__(SearchHit)
        hit.__dict__.update(
            chunk_id=chunk_id,
            document_id=document_id,
            ordinal=int(ordinal),
            score=float(score),
            text=text,
            title=title,
            locator=locator,
            source=source,
        )
        return hit

    def rescored(self, score: float) -> SearchHit:
        """The same hit with ``score``: a copy of its fields with the score replaced
        (fusion rescores ~160 hits a search: ``dataclasses.replace`` took 8 µs each, the
        frozen ``__init__`` 1 µs, this 0.5)."""
        hit = object.__new__(SearchHit)
        hit.__dict__.update(self.__dict__, score=score)
        return hit
