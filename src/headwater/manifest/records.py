"""Typed records read from and written to the manifest.

Rows never leave the manifest package as SQLAlchemy rows or dicts: they become these
frozen dataclasses, and writes are described by them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import lru_cache
from typing import Any

from headwater.types import Access, MetadataValue

ACTIVE = "active"
DELETED = "deleted"

SOURCE_STAGES = ("enumerate", "fetch", "parse")


@dataclass(frozen=True)
class DocumentFields:
    """The columns of a documents row that the sync runner decides."""

    document_id: str
    source_id: str
    object_id: str
    locator: str
    title: str
    media_type: str | None
    source_version: str | None
    checksum: str | None
    signature: str | None
    pipeline_version: str
    revision: int
    sequence: int | None
    state: str
    acl: tuple[str, ...]
    metadata: Mapping[str, MetadataValue]
    last_seen_run: str | None

    @property
    def access(self) -> Access:
        """The document's ACL as an ``Access``."""
        return Access.from_principals(self.acl)

    @classmethod
    def from_fields(cls, row: Sequence[Any]) -> DocumentFields:
        """The fields of a ``documents`` row selected as ``FIELD_COLUMNS``, in that order
        (no timestamps): what the sync gates decide from, one per object a run lists."""
        # Not through the frozen dataclass's __init__ (one object.__setattr__ per field):
        # the instance's __dict__ given whole, unpacked by hand rather than zipped with the
        # names, the same object in half the time (tests/core/test_noop_fast_paths.py).
        # The metadata stays JSON until read (``StoredMetadata``): a no-op asks it only
        # whether it holds a few keys.
        (document_id, source_id, object_id, locator, title, media_type, source_version,
         checksum, signature, pipeline_version, revision, sequence, state, acl, metadata,
         last_seen_run) = row  # fmt: skip
        record = object.__new__(cls)
        object.__setattr__(record, "__dict__", {
            "document_id": document_id, "source_id": source_id, "object_id": object_id,
            "locator": locator, "title": title, "media_type": media_type,
            "source_version": source_version, "checksum": checksum, "signature": signature,
            "pipeline_version": pipeline_version, "revision": revision, "sequence": sequence,
            "state": state, "acl": stored_acl(acl), "metadata": StoredMetadata(metadata),
            "last_seen_run": last_seen_run,
        })  # fmt: skip
        return record

    def values(self) -> dict[str, Any]:
        """The row's values as the manifest stores them (JSON for ACL and metadata)."""
        values = {f.name: getattr(self, f.name) for f in fields(DocumentFields)}
        values["acl"] = json.dumps(list(self.acl))
        values["metadata"] = json.dumps(dict(self.metadata), sort_keys=True)
        return values


@dataclass(frozen=True)
class DocumentRecord(DocumentFields):
    """A documents row as read from the manifest."""

    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> DocumentRecord:
        """The record of a ``documents`` row (ACL and metadata decoded from JSON)."""
        m = row._mapping
        return cls.from_values(tuple(m[name] for name in RECORD_COLUMNS))

    @classmethod
    def from_values(cls, row: Sequence[Any]) -> DocumentRecord:
        """The record of a ``documents`` row selected as ``RECORD_COLUMNS``, in that order:
        built positionally, since a no-op re-sync builds one per object it lists."""
        (doc_id, source_id, object_id, locator, title, media_type, version, checksum) = row[:8]
        (signature, pipeline, revision, sequence, state, acl, metadata) = row[8:15]
        (last_seen, created, updated) = row[15:]
        return cls(
            doc_id, source_id, object_id, locator, title, media_type, version, checksum,
            signature, pipeline, revision, sequence, state, stored_acl(acl),
            json.loads(metadata), last_seen, created, updated,
        )  # fmt: skip


class StoredMetadata(Mapping[str, MetadataValue]):
    """A row's metadata as the manifest stores it (a JSON object), decoded when first read.

    Whether it holds a key made of letters, digits and ``_`` is answered from the text
    while the text does not name the key at all: any JSON encoder writes such a key as
    ``"key"``. The sync gates ask a row that much (``content``, the parsed headers) and
    nothing else when its version hint is unchanged.
    """

    __slots__ = ("_text", "_value")

    def __init__(self, text: str) -> None:
        self._text = text
        self._value: dict[str, MetadataValue] | None = None

    def _decoded(self) -> dict[str, MetadataValue]:
        if self._value is None:
            self._value = json.loads(self._text)
        return self._value

    def _absent(self, key: object) -> bool:
        """Whether the text alone shows that ``key`` is not held."""
        quoted = _quoted(key) if isinstance(key, str) else ""
        return bool(quoted) and quoted not in self._text

    def is_text(self, text: str | None) -> bool:
        """Whether the manifest stores exactly ``text`` (the same JSON, written alike)."""
        return self._text == text

    def may_hold_any(self, keys: frozenset[str]) -> bool:
        """False when the text alone shows that none of ``keys`` is held."""
        quoted = _all_quoted(keys)
        return quoted is None or any(q in self._text for q in quoted)

    def __getitem__(self, key: str) -> MetadataValue:
        if self._absent(key):
            raise KeyError(key)
        return self._decoded()[key]

    def __contains__(self, key: object) -> bool:
        return not self._absent(key) and key in self._decoded()

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return default if self._absent(key) else self._decoded().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredMetadata) and other._text == self._text:
            return True
        return isinstance(other, Mapping) and self._decoded() == dict(other.items())

    def __repr__(self) -> str:
        return repr(self._decoded())


@lru_cache(maxsize=256)
def _quoted(key: str) -> str:
    """``"key"`` for a key of ASCII letters, digits and ``_`` (written so by any JSON
    encoder), else "" (its JSON form varies: decode to know)."""
    return f'"{key}"' if key.isascii() and key.replace("_", "a").isalnum() else ""


@lru_cache(maxsize=16)
def _all_quoted(keys: frozenset[str]) -> tuple[str, ...] | None:
    """``_quoted`` of each key; None when one of them has no fixed JSON form."""
    quoted = tuple(_quoted(key) for key in keys)
    return None if not all(quoted) else quoted


@lru_cache(maxsize=256)
def stored_acl(stored: str) -> tuple[str, ...]:
    """A stored ACL decoded (most documents of a source share a few ACLs)."""
    return tuple(json.loads(stored))


RECORD_COLUMNS = tuple(f.name for f in fields(DocumentRecord))  # the table's own order
FIELD_COLUMNS = tuple(f.name for f in fields(DocumentFields))  # the same, no timestamps


@dataclass(frozen=True)
class RowVersion:
    """The documents row a write was decided from: the commit applies the write only if
    the row is still at this revision, sequence and state (else ``WriteConflict``)."""

    revision: int
    sequence: int | None
    state: str

    @classmethod
    def of(cls, record: DocumentFields) -> RowVersion:
        """The row version ``record`` is at."""
        return cls(record.revision, record.sequence, record.state)


@dataclass(frozen=True)
class DocumentWrite(DocumentFields):
    """A full documents row to insert (``is_new``) or update.

    With ``checked`` the write is conditional: an ``is_new`` row must still be absent, an
    update must find the row at ``expect``; otherwise the batch is a ``WriteConflict``.
    """

    is_new: bool
    checked: bool = False
    expect: RowVersion | None = None


@dataclass(frozen=True)
class TombstoneWrite:
    """A delete at ``revision``; with ``expect`` only if the row is still at that version."""

    document_id: str
    source_id: str
    object_id: str
    revision: int
    sequence: int | None
    reason: str
    expect: RowVersion | None = None


@dataclass(frozen=True)
class FailureWrite:
    """A failure to record for one document at one stage."""

    source_id: str
    object_id: str
    document_id: str
    locator: str
    stage: str
    error_class: str
    message: str
    pipeline_version: str
    source_version: str | None
    fetch_ref: str | None
    permanent: bool
    revision: int | None = None  # the document revision that failed (index stages)


@dataclass(frozen=True)
class FailureRecord:
    """A failures row as read from the manifest."""

    entry_id: int
    source_id: str
    object_id: str
    document_id: str
    locator: str
    stage: str
    error_class: str
    message: str
    pipeline_version: str
    source_version: str | None
    fetch_ref: str | None
    attempts: int
    permanent: bool
    status: str
    priority: int
    first_failed_at: datetime
    last_failed_at: datetime
    resolved_at: datetime | None
    run_id: str | None
    revision: int | None = None

    @classmethod
    def from_row(cls, row: Any) -> FailureRecord:
        """The record of a ``failures`` row."""
        m = dict(row._mapping)
        m["permanent"] = bool(m["permanent"])
        return cls(**m)


@dataclass
class RunCounts:
    """The item counts of one run: seen, new, changed, unchanged, deleted, failed, stale."""

    seen: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    stale: int = 0
    # How many items the listing expects in all, when the source's API says
    # (``ExpectingTotal``): a forecast, not a count, so never in ``as_dict``.
    expected: int | None = None

    def as_dict(self) -> dict[str, int]:
        """The counts as a JSON-ready dict."""
        return {
            "seen": self.seen,
            "new": self.new,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "failed": self.failed,
            "stale": self.stale,
        }


@dataclass(frozen=True)
class RunRecord:
    """A runs row as read from the manifest."""

    run_id: str
    source_id: str
    status: str
    window_start: datetime | None
    window_end: datetime
    started_at: datetime
    finished_at: datetime | None
    counts: RunCounts
    duration_s: float
    error: str | None
    prune: dict[str, Any] | None
    attempts: int
    phases: dict[str, float] | None = None  # seconds per phase (sync/phases.py)

    @classmethod
    def from_row(cls, row: Any) -> RunRecord:
        """The record of a ``runs`` row."""
        m = row._mapping
        return cls(
            run_id=m["run_id"],
            source_id=m["source_id"],
            status=m["status"],
            window_start=m["window_start"],
            window_end=m["window_end"],
            started_at=m["started_at"],
            finished_at=m["finished_at"],
            counts=RunCounts(
                **{
                    k: m[k]
                    for k in ("seen", "new", "changed", "unchanged", "deleted", "failed", "stale")
                },
                expected=m.get("expected"),
            ),
            duration_s=m["duration_s"],
            error=m["error"],
            prune=json.loads(m["prune"]) if m["prune"] else None,
            attempts=m["attempts"],
            phases=json.loads(m["phases"]) if m.get("phases") else None,
        )


@dataclass
class BatchCommit:
    """Everything one batch changes in the manifest, committed in one transaction."""

    writes: list[DocumentWrite] = field(default_factory=list)
    seen_objects: list[str] = field(default_factory=list)  # listed unchanged, by object id
    seen_prefixes: list[tuple[str, str]] = field(default_factory=list)  # (source_id, folder)
    tombstones: list[TombstoneWrite] = field(default_factory=list)
    cleared_tombstones: list[str] = field(default_factory=list)
    failures: list[FailureWrite] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    still_failing: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        """Whether the batch changes nothing."""
        return not (
            self.writes
            or self.seen_objects
            or self.seen_prefixes
            or self.tombstones
            or self.failures
            or self.resolved
            or self.cleared_tombstones
        )
