"""The sink contract: a sink only applies what the core decided.

A sink is a class with an ``Options`` pydantic model, a ``schema_version`` and
``capabilities`` as data, built as ``Sink(options, context)``. Every write carries the
document's manifest revision; the sink keeps the highest revision it has seen per
document (live or deleted) and refuses an older write with ``WriteOutcome.STALE``
(invariant 5). A replace swaps a document's chunks atomically: after it the sink holds
exactly the given chunks at that revision (invariants 6 and 7), and a search never sees
two revisions of a document nor half of one, even when the replace fails midway.
Replacing with the revision the sink already holds is accepted (an idempotent re-apply).

A sink is bound to one manifest (``bind``); the core tells it when a purged tombstone
may be forgotten (``forget_tombstones``), and ``update_access`` answers ``ABSENT`` for a
document it does not hold, so the core writes the document in full instead.

Generations: one sink instance serves one generation (``SinkContext.generation``), in
storage of its own, so a rebuild fills a new generation while the live one serves;
``drop`` removes a generation's storage (disk freed). The read pointer (which generation
is live) is kept in the manifest, so a switch is one manifest transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from headwater.types import Access, EmbeddedChunk, IndexDocument, SearchHit, SearchMode


class SinkOptions(BaseModel):
    """Base of every sink's options model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class SinkCapabilities:
    """What a sink can search by: vectors, keywords, or both."""

    vector: bool
    keyword: bool


@dataclass(frozen=True)
class SinkContext:
    """Where a sink lives: its configured name, the state dir, the vector dimension, and
    the index generation this instance serves (1 keeps the pre-generation storage names;
    generation N > 1 lives in storage of its own, e.g. ``index-main@2.db``)."""

    name: str
    state_dir: Path
    dimension: int
    generation: int = 1


class WriteOutcome(StrEnum):
    """What a sink did with a write: applied, stale (older than held) or absent."""

    APPLIED = "applied"
    STALE = "stale"
    ABSENT = "absent"  # update_access: the sink holds no live chunks of the document


@dataclass(frozen=True)
class SearchRequest:
    """One search. ``vector`` is the embedded query (None for keyword-only searches).

    ``principals`` is never empty (it holds at least ``public``); a chunk is returned only
    when its ACL meets them. ``sources`` limits results to those source ids when given;
    ``scopes`` (tokens of ``headwater.scopes``) to chunks holding any of them, matched
    exactly inside the index like the ACL (a sink stores ``scope_tokens`` per chunk).
    """

    text: str
    vector: Sequence[float] | None
    principals: Sequence[str]
    k: int
    mode: SearchMode
    sources: Sequence[str] | None = None
    scopes: Sequence[str] | None = None


@dataclass(frozen=True)
class InventoryRow:
    """What a sink holds for one document, for reconcile."""

    document_id: str
    revision: int
    chunks: int


@runtime_checkable
class Sink(Protocol):
    """The contract of an index: revisioned writes, ACL-filtered search, inventory."""

    type_name: ClassVar[str]
    schema_version: ClassVar[str]
    capabilities: ClassVar[SinkCapabilities]

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> WriteOutcome:
        """Make the document's chunks exactly ``chunks`` at ``revision``, atomically."""
        ...

    def delete(self, document_id: str, revision: int) -> WriteOutcome:
        """Remove every chunk of the document and remember ``revision`` as its tombstone."""
        ...

    def update_access(self, document_id: str, access: Access, revision: int) -> WriteOutcome:
        """Change the ACL on every chunk of the document; vectors stay untouched.

        ``ABSENT`` when the sink holds no live chunks of the document (nothing changed).
        """
        ...

    def forget_tombstones(self, document_ids: Sequence[str]) -> None:
        """Drop the tombstones of these documents (their manifest tombstones were purged;
        a re-created document starts above the old revision). Live documents stay."""
        ...

    def bound_manifest(self) -> str | None:
        """The id of the manifest this index is bound to; None when it is bound to none
        (its storage was created just now, or lost and created again). Reads only."""
        ...

    def bind(self, manifest_id: str, *, empty: bool = False) -> None:
        """Bind the index to the manifest ``manifest_id``; with ``empty``, remove every
        chunk and tombstone it holds first. The core calls it for an index bound to none,
        and for one bound to another manifest only when the operator said so (``headwater
        reconcile --adopt`` keeps what it holds, ``--reset`` empties it): a sink never
        empties an index on its own."""
        ...

    def count(self, document_id: str) -> int:
        """How many chunks the sink holds for the document."""
        ...

    def revision(self, document_id: str) -> int | None:
        """The live revision the sink holds for the document; None if absent or deleted."""
        ...

    def search(self, request: SearchRequest) -> list[SearchHit]:
        """Top ``k`` visible chunks; never a chunk the principals may not see."""
        ...

    def inventory(self) -> Iterator[InventoryRow]:
        """Every live document the sink holds, with its revision and chunk count, in
        ascending ``document_id`` order, streamed (reconcile merges it with the manifest)."""
        ...

    def chunk_texts(self, document_id: str) -> list[str]:
        """The texts of the document's live chunks in ordinal order (rebuild verification)."""
        ...

    def drop(self) -> None:
        """Delete everything this generation stores (files, collections) and close."""
        ...

    def close(self) -> None:
        """Release the sink's connections and files."""


@runtime_checkable
class Publishing(Protocol):
    """A sink whose engine serves searches through a read alias that must follow the live
    generation (OpenSearch): ``publish()`` points the alias at this generation's storage in
    one atomic call. The core calls it whenever the generation becomes live (a switch or
    a rollback); sinks that read their live generation directly need nothing of it."""

    def publish(self) -> None:
        """Point the engine's read alias at this generation, atomically."""
        ...
