"""The pure decisions of the sync gates: the skip rule, the inferred-delete budget.

Gate 1 compares the source's version hint with the manifest before any content is read;
gate 2 compares the checksum of the normalized text after parsing. Both also require the
pipeline version to be unchanged (invariant 3); ``decide`` is that rule as a pure
function, tested as a table (tests/core/test_core_skip_rule.py). ``InferredDeletes`` is
the budget of deletes a connector only inferred. Beside them: what a sink shows of a
document (``signature_of``), an ACL-only write, and a source's identity. Nothing here
reads or writes anything; ``sync.gates.BatchBuilder`` applies these decisions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from hashlib import sha256
from json.encoder import encode_basestring_ascii

from headwater.identity import document_id
from headwater.manifest.records import ACTIVE, DocumentFields, DocumentWrite
from headwater.pipeline.parse import ParseOptions
from headwater.types import Access, MetadataValue, SourceDocument


class Decision(StrEnum):
    """What invariant 3 allows for one source document (see ``decide``)."""

    SKIP_BY_HINT = "skip_by_hint"  # the version hint proves the content unchanged: read nothing
    FETCH = "fetch"  # the content may have changed: read and parse it, then decide again
    SKIP_BY_CHECKSUM = "skip_by_checksum"  # same normalized content: keep the revision
    REPROCESS = "reprocess"  # new or changed content, or a new content version


def decide(
    record: DocumentFields | None,
    item: SourceDocument,
    content_version: str,
    *,
    checksum: str | None = None,
    trust_hint: bool = True,
) -> Decision:
    """The skip rule (invariant 3) as a pure function.

    Called first without ``checksum`` (before any content is read), then again with the
    checksum of the parsed text when the first answer was ``FETCH``. A document is skipped
    only when the manifest holds it active at the same content version and either its
    version hint or its checksum is unchanged; ``trust_hint=False`` (``sync --full``)
    ignores the hint so the content is read and compared by checksum. Only the normalized
    text enters the checksum, never volatile data such as fetch times or request ids.
    """
    current = (
        record is not None and record.state == ACTIVE and record.pipeline_version == content_version
    )
    if checksum is None:
        if current and trust_hint and record is not None and record.source_version == item.version:
            return Decision.SKIP_BY_HINT
        return Decision.FETCH
    if current and record is not None and record.checksum == checksum:
        return Decision.SKIP_BY_CHECKSUM
    return Decision.REPROCESS


class Outcome(StrEnum):
    """What the gates decided for one item."""

    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    STALE = "stale"
    FAILED = "failed"
    DELETED = "deleted"
    IGNORED = "ignored"


def signature_of(
    checksum: str, title: str, locator: str, metadata: Mapping[str, MetadataValue]
) -> str:
    """What a sink shows besides the ACL: a change here means the chunks must be re-written.

    The sha256 of ``json.dumps([checksum, title, locator, metadata], sort_keys=True)``; a
    no-op re-sync computes one per object it lists, so the JSON of plain strings and
    lists of strings is written here directly (the same text, ``_signed_json``)."""
    payload = _signed_json(checksum, title, locator, metadata)
    if payload is None:
        payload = _SORTED_JSON.encode([checksum, title, locator, dict(metadata)])
    return sha256(payload.encode()).hexdigest()


# json.dumps(..., sort_keys=True) builds an encoder per call; this one is built once
_SORTED_JSON = json.JSONEncoder(sort_keys=True)
_text = encode_basestring_ascii  # a JSON string as the default encoder writes it


def _signed_json(
    checksum: str, title: str, locator: str, metadata: Mapping[str, MetadataValue]
) -> str | None:
    """``_SORTED_JSON.encode([checksum, title, locator, dict(metadata)])`` when every value
    is a ``str`` or a list of them (None otherwise: the encoder decides)."""
    if not (type(checksum) is str and type(title) is str and type(locator) is str):
        return None
    if (stored := stored_metadata_json(metadata)) is None:
        return None
    return f"[{_text(checksum)}, {_text(title)}, {_text(locator)}, {stored}]"


def stored_metadata_json(metadata: Mapping[str, MetadataValue]) -> str | None:
    """``json.dumps(dict(metadata), sort_keys=True)``, the text the manifest stores, when
    every key is a ``str`` and every value a ``str`` or a list of them (else None)."""
    try:
        keys = sorted(metadata)
    except TypeError:  # keys of several types: the encoder decides
        return None
    items: list[str] = []
    for key in keys:
        value = metadata[key]
        if type(key) is not str:
            return None
        if type(value) is str:
            items.append(f"{_text(key)}: {_text(value)}")
        elif type(value) is list and all(type(v) is str for v in value):
            items.append(f"{_text(key)}: [{', '.join(map(_text, value))}]")
        else:
            return None
    return "{" + ", ".join(items) + "}"


def acl_only_write(record: DocumentFields, acl: tuple[str, ...]) -> DocumentWrite:
    """The same row with a new ACL and the next revision: an ACL-only change."""
    values = {f.name: getattr(record, f.name) for f in fields(DocumentFields)}
    values.update(acl=acl, revision=record.revision + 1)
    return DocumentWrite(**values, is_new=False)


@dataclass
class SourceIdentity:
    """A source's identity and defaults: tenant, type, id, access, pipeline version, parsing."""

    tenant: str
    source_type: str
    source_id: str
    default_access: Access
    pipeline_version: str
    parse_options: ParseOptions = field(default_factory=ParseOptions)

    def document_id(self, object_id: str) -> str:
        """The stable document id of ``object_id`` in this source."""
        return document_id(self.tenant, self.source_type, self.source_id, object_id)


DELETED_IN_SOURCE = "deleted_in_source"  # the source reported the delete
INFERRED_DELETED = "inferred_deleted"  # concluded from a 404/410 or a noindex
EMPTIED = "empty_document"  # the document's content has no text left


@dataclass
class InferredDeletes:
    """The budget of deletes a connector only inferred (404/410, ``inferred``), across runs.

    Of the documents the source held recently (``active`` now plus the ``held``
    tombstones of deletes inferred earlier and not yet purged, i.e. within the tombstone
    retention), at most ``max_fraction`` may be gone by inference; a single one is always
    allowed when none is held. So a lasting 404 storm stops at the fraction instead of
    taking a fraction (or one page) more every run. The rest stay active and the run
    reports the prune blocked; ``force`` applies them as confirmed deletes.
    """

    active: int
    max_fraction: float
    force: bool = False
    held: int = 0
    applied: int = 0
    blocked: int = 0

    def allow(self) -> bool:
        """Whether one more inferred delete fits the budget (counted when it does)."""
        wanted = self.held + self.applied + 1
        if self.force or wanted <= 1 or wanted <= self.max_fraction * self.base:
            self.applied += 1
            return True
        self.blocked += 1
        return False

    @property
    def base(self) -> int:
        """The documents the fraction is of: those active at the run's start and those
        whose deletes were inferred within the retention."""
        return self.active + self.held
