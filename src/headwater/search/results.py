"""What a search shows: each document's best chunk, in rank order, as results with snippets.

The search service fuses the indexes' lists; this module turns the fused ranking into
what the caller sees: the documents the manifest admits (asked in rank order, only as
deep as the ``k`` results need), each document's best chunk, none below ``--min-score``,
each with a snippet around the query's first word found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.jsonview import JsonView
from headwater.types import SearchHit

SNIPPET_CHARS = 240
SCORE_DIGITS = 6  # a result's score is rounded to this many decimals

# A code span (kept as it is: a backslash inside one is literal), or a Markdown backslash
# escape of ASCII punctuation (``malloc\_free\_fill``, as HTML reaches the text through
# trafilatura's Markdown) whose backslash a reader should not see.
_ESCAPE_OR_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1|\\([!-/:-@\[-`{-~])")


def unescape_markdown(text: str) -> str:
    """``text`` without Markdown backslash escapes outside code spans."""
    if "\\" not in text:  # no escape to remove: code spans are kept as they are
        return text
    return _ESCAPE_OR_CODE.sub(lambda m: m.group(2) if m.group(2) else m.group(0), text)


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first query term found, on word boundaries,
    Markdown escapes removed (``chunk`` keeps the indexed text as it is)."""
    flat = unescape_markdown(" ".join(text.split()))
    if len(flat) <= width:
        return flat
    terms = [t for t in re.findall(r"\w+", query.lower()) if len(t) > 2]
    lower = flat.lower()
    hit = min((lower.find(t) for t in terms if t in lower), default=0)
    start = max(0, hit - width // 3)
    if start:
        start = flat.find(" ", start) + 1 or start
    piece = flat[start : start + width]
    if start + width < len(flat):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + piece


@dataclass(frozen=True, eq=False)
class SearchResult(JsonView):
    """One search result: a document's best chunk (or a chunk) with its snippet."""

    document_id: str
    title: str
    locator: str
    source: str
    score: float
    snippet: str
    chunk: str
    chunk_id: str
    ordinal: int

    @classmethod
    def from_hit(cls, hit: SearchHit, query: str) -> SearchResult:
        """The result for one sink hit of ``query``."""
        return cls(
            document_id=hit.document_id,
            title=hit.title,
            locator=hit.locator,
            source=hit.source,
            score=round(float(hit.score), SCORE_DIGITS),
            snippet=snippet(hit.text, query),
            chunk=hit.text,
            chunk_id=hit.chunk_id,
            ordinal=hit.ordinal,
        )

    def as_dict(self) -> dict[str, Any]:
        """The result as the JSON ``headwater search --json`` prints."""
        return {
            "document_id": self.document_id,
            "title": self.title,
            "locator": self.locator,
            "source": self.source,
            "score": self.score,
            "snippet": self.snippet,
            "chunk": self.chunk,
            "chunk_id": self.chunk_id,
            "ordinal": self.ordinal,
        }


def admitted_first(
    hits: Sequence[SearchHit],
    gate: Callable[[Sequence[str]], set[str]],
    k: int,
    per_document: bool,
    min_score: float | None,
) -> tuple[list[SearchHit], bool]:
    """What ``hits`` show (``shown``) of the documents ``gate`` admits, and whether a hit
    fell below ``min_score``; the manifest is asked about documents in rank order, ``2k``
    at first and twice as many each time, only until ``k`` are shown: what a prefix of
    the ranking shows is a prefix of what the whole shows, and most searches show their
    ``k`` from the first ``2k`` documents of some 150 (each a read of the manifest)."""
    order = list(dict.fromkeys(h.document_id for h in hits))
    first_at: dict[str, int] = {}
    for position, hit in enumerate(hits):
        first_at.setdefault(hit.document_id, position)
    asked, step = 0, 2 * k
    while True:
        asked = min(len(order), asked + step)
        visible = gate(order[:asked])
        end = first_at[order[asked]] if asked < len(order) else len(hits)
        found, below = shown(
            [h for h in hits[:end] if h.document_id in visible], per_document, min_score
        )
        if len(found) >= k or asked == len(order):
            return found, below
        step *= 2


def shown(
    hits: list[SearchHit], per_document: bool, min_score: float | None
) -> tuple[list[SearchHit], bool]:
    """``hits`` as results show them (each document's best chunk when ``per_document``,
    none below ``min_score``), and whether a hit fell below it: then deeper lists would
    add none above it."""
    if per_document:
        hits = best_chunk_per_document(hits)
    if min_score is None:
        return hits, False
    # on the score as results show it (rounded)
    below = any(round(h.score, SCORE_DIGITS) < min_score for h in hits)
    return [h for h in hits if round(h.score, SCORE_DIGITS) >= min_score], below


def best_chunk_per_document(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Keep each document's best-ranked chunk, in rank order."""
    seen: set[str] = set()
    best = []
    for hit in hits:
        if hit.document_id not in seen:
            seen.add(hit.document_id)
            best.append(hit)
    return best
