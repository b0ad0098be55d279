"""Gate 1 for a batch at once: the listed documents the manifest holds just as listed.

The idea: in a re-sync nearly every listed object is unchanged, and gate 1's skip (the
first return of ``BatchBuilder.add_document``: the row active at this pipeline version
with the same version hint, ACL, title, locator and metadata) needs only a few columns
of the row, compared as the manifest stores them. So before the gates, the batch's
plain documents are compared with those columns (``HINT_COLUMNS``, one query per 500
ids; no full row, no record object, no pass through the gates): those held exactly as
listed are counted unchanged and marked seen, as the gates would count and mark them.
Everything else goes through the gates with its full row, as before: an object the
manifest does not hold or holds otherwise, one with a sequence, a dead failure, metadata
the manifest would store differently or an ACL that cannot be stored, and anything the
source's rules exclude. The check may answer "unchanged" only where the gates would
(``tests/core/test_held_as_listed.py`` runs both on the same rows and listings); where
it cannot tell, the gates decide.
"""

from __future__ import annotations

import json
from datetime import datetime

from headwater.errors import ConfigError
from headwater.manifest.records import ACTIVE
from headwater.manifest.store import Manifest
from headwater.sync.decisions import SourceIdentity, stored_metadata_json
from headwater.sync.known import HINT_COLUMNS, HintRow, ManifestVersions
from headwater.sync.rules import RuleSet
from headwater.sync.unavailable import UNAVAILABLE
from headwater.types import Access, Failure, SourceDocument, SourceItem

__all__ = ["HeldAsListed"]

# what a listed document must find in its row: (source_version, locator, metadata,
# state, pipeline_version, acl) as stored, and the title it was listed with ("": any)
Expected = tuple[tuple[str | None, str, str, str, str, str], str]

# the distinct ACLs whose stored text is kept (a source's documents share a few)
MAX_ACLS = 1024


class HeldAsListed:
    """Splits a batch into the documents held as listed (ids) and the rest (items)."""

    def __init__(
        self, manifest: Manifest, source: SourceIdentity, rules: RuleSet, started: datetime
    ) -> None:
        self.manifest = manifest
        self.source = source
        self.rules = rules if rules.rules else None  # no rules: nothing to ask per document
        self.started = started
        self._acl_texts: dict[Access, str | None] = {}

    def split(
        self, items: list[SourceItem], known: ManifestVersions | None
    ) -> tuple[list[str], list[SourceItem]]:
        """The object ids of ``items`` the manifest holds as listed, and the other items
        (in their order) for the gates. The rows the connector's questions read already
        (``known.many``) are taken, each once, for every item, and compared; the others
        are read now."""
        kept: dict[str, HintRow] = {}
        unread = None  # the ids the connector did not ask of; None: all of them
        if known is not None and known.keeps_rows():
            kept, unread = known.take(_object_ids(items))
        expected = self._expected(items)
        if not expected:
            return [], items
        rows = [kept[o] for o in expected if o in kept]  # an id asked of with no row: new
        asked = set(unread) if unread is not None else None
        rows += self._rows([o for o in expected if asked is None or o in asked])
        held = self._held(expected, rows)
        if not held:
            return [], items
        listed = [o for o in expected if o in held]  # in the listing's order
        return listed, [i for i in items if getattr(i, "object_id", None) not in held]

    def _expected(self, items: list[SourceItem]) -> dict[str, Expected]:
        """What each plain document of ``items`` must find in its row, by object id."""
        # a failure's stand-in document has its own row to decide: never skipped here
        standing = {i.document.object_id for i in items if isinstance(i, Failure) and i.document}
        pipeline, rules, started = self.source.pipeline_version, self.rules, self.started
        default_acl = self._acl_text(None)  # most documents carry the source's access
        expected: dict[str, Expected] = {}
        for item in items:
            if type(item) is not SourceDocument or item.sequence is not None:
                continue
            metadata = item.metadata
            if metadata.get("content") == UNAVAILABLE:
                continue  # a metadata-only document's content: the gates redrive it
            stored = stored_metadata_json(metadata)
            acl = default_acl if item.access is None else self._acl_text(item.access)
            if stored is None or acl is None or item.object_id in standing:
                continue
            if rules is not None and rules.excludes(item, started):
                continue
            row = (item.version, item.locator, stored, ACTIVE, pipeline, acl)
            expected[item.object_id] = (row, item.title or "")
        return expected

    def _rows(self, ids: list[str]) -> list[HintRow]:
        """The ``HINT_COLUMNS`` of these ids' rows; a listing comes about in the index's
        order (a walk, a bucket's keys), so each part is read as a range if it can be."""
        if not ids:
            return []
        rows = self.manifest.rows_by_object_ids(
            self.source.source_id, ids, HINT_COLUMNS, listed=True
        )
        return list(rows)

    def _held(self, expected: dict[str, Expected], rows: list[HintRow]) -> set[str]:
        """The ids of ``expected`` whose ``rows`` hold what is expected and have no dead
        source-stage failure (a failure still dead at its version is the gates' to count)."""
        matched: dict[str, str] = {}  # object id -> document id
        for row in rows:
            values, title = expected[row[0]]
            if row[1:7] == values and (not title or title == row[7]):
                matched[row[0]] = row[8]
        if matched:
            dead = self.manifest.failures.dead_source_versions(
                matched.values(), self.source.source_id
            )
            if dead:
                return {o for o, d in matched.items() if d not in dead}
        return set(matched)

    def _acl_text(self, access: Access | None) -> str | None:
        """The ACL as the manifest stores it (``access`` None: the source's); None when
        its principals are refused (the gates record that failure)."""
        access = self.source.default_access if access is None else access
        texts = self._acl_texts
        if access not in texts:
            if len(texts) >= MAX_ACLS:
                texts.clear()
            try:
                texts[access] = json.dumps(list(access.principals()))
            except ConfigError:
                texts[access] = None
        return texts[access]


def _object_ids(items: list[SourceItem]) -> list[str]:
    """Every object id ``items`` name: each item's, and a failure's stand-in's."""
    ids = [i.object_id for i in items if hasattr(i, "object_id")]
    ids += [i.document.object_id for i in items if isinstance(i, Failure) and i.document]
    return ids
