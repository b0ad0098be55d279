"""Index claims: which index task may embed which pending document right now.

Pending work stays a manifest query (the manifest is the outbox); a claim only says who
is working on a document and until when. A task claims a batch in one statement
(``INSERT … ON CONFLICT``: a row another live owner holds is left alone, an expired one
is taken over), indexes exactly those ids, then releases them. So index workers embed
different documents in parallel and never the same one at once; a dead worker's claims
expire and another task re-claims them. Revision gating in the sinks keeps a repeated
write harmless, so a claim is an efficiency guarantee, not a correctness one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from headwater.clock import utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.index_state import IndexState

c = t.index_claims

# How many pending rows one claim looks at per index, per page, to find unclaimed ones.
SCAN_PAGE = 256


class ClaimLedger:
    """The ``index_claims`` table: who indexes which pending document until when."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.index_state = IndexState(engine)

    def _insert(self) -> Any:
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        return dialect.insert(c)

    def claimed_by_others(self, owner: str) -> set[str]:
        """Documents another owner holds a live claim on."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.c.document_id).where(c.c.owner != owner, c.c.expires_at > utcnow())
            )
            return {r[0] for r in rows}

    def candidates(
        self,
        owner: str,
        targets: Sequence[tuple[str, str]],
        limit: int,
        exclude: Iterable[str] = (),
    ) -> list[str]:
        """Up to ``limit`` pending document ids (in any index) nobody else holds."""
        skip = self.claimed_by_others(owner) | set(exclude)
        found: dict[str, None] = {}
        for name, version in targets:
            after = ""
            while len(found) < limit:
                page = self.index_state.pending(name, version, limit=SCAN_PAGE, after=after)
                for pw in page:
                    doc_id = pw.document.document_id
                    if doc_id not in skip:
                        found.setdefault(doc_id)
                        if len(found) >= limit:
                            break
                if len(page) < SCAN_PAGE:
                    break
                after = page[-1].document.document_id
        return list(found)[:limit]

    def claim(
        self,
        owner: str,
        targets: Sequence[tuple[str, str]],
        *,
        limit: int,
        seconds: int,
        exclude: Iterable[str] = (),
    ) -> list[str]:
        """Claim up to ``limit`` pending documents for ``owner``; returns what it won."""
        wanted = self.candidates(owner, targets, limit, exclude)
        if not wanted:
            return []
        now = utcnow()
        expires = now + timedelta(seconds=seconds)
        statement = self._insert().values(
            [
                {"document_id": d, "owner": owner, "claimed_at": now, "expires_at": expires}
                for d in wanted
            ]
        )
        statement = statement.on_conflict_do_update(
            index_elements=[c.c.document_id],
            set_={"owner": owner, "claimed_at": now, "expires_at": expires},
            where=(c.c.expires_at <= now) | (c.c.owner == owner),
        ).returning(c.c.document_id)
        with begin_write(self.engine) as conn:
            won = {row[0] for row in conn.execute(statement)}
        return [d for d in wanted if d in won]

    def release(self, owner: str, document_ids: Sequence[str] | None = None) -> None:
        """Drop ``owner``'s claims (all of them when ``document_ids`` is None)."""
        query = delete(c).where(c.c.owner == owner)
        if document_ids is not None:
            query = query.where(c.c.document_id.in_(list(document_ids)))
        with begin_write(self.engine) as conn:
            conn.execute(query)

    def holders(self) -> dict[str, int]:
        """Live claims per owner (for ``status``)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.c.owner, func.count()).where(c.c.expires_at > utcnow()).group_by(c.c.owner)
            )
            return {str(r[0]): int(r[1]) for r in rows}
