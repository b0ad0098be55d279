"""Permission-aware search fanned out over the configured indexes, fused here.

The caller's principals are their email, their groups and PUBLIC (invariant 12); a
user's email alone is expanded, in one place (``expand_principals``), into the groups the
sources' group listings say they belong to. Each sink filters by them, and by the
configured source ids, inside the search, never after the top-k; the results are then
checked against the manifest, the truth (``admitted``), so a document revoked or deleted
there is never returned while an index still holds its old ACL. Sinks answer only plain
requests (``SearchMode.VECTOR`` or ``SearchMode.KEYWORD``); this module asks every index
that serves the wanted mode (vectors from one, keywords from another, or both from one
sqlite index) and fuses the
ranked lists with the default fusion of ``search.fusion`` (score-normalized, so hybrid
never ranks below the better of its parts on the retrieval benchmark). Hybrid uses
whichever halves some index serves: it is vector search only when no index serves
keywords, and vice versa.
It takes the parts it uses (named sinks, an embedding function), never a Workspace.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.errors import ConfigError
from headwater.scopes import Scope, scope_keys
from headwater.search.aliases import IdentityAliases
from headwater.search.fusion import DEFAULT_RRF_K, fuse, reciprocal_rank_fusion
from headwater.search.results import SearchResult, admitted_first, shown
from headwater.search.terms import answering
from headwater.sinks.base import SearchRequest, Sink
from headwater.types import SearchHit, SearchMode, caller_principals, normalize_identity

if TYPE_CHECKING:
    from headwater.manifest.groups import GroupLedger, SyncedGroup


OVERFETCH = 4  # chunks asked of the sink per document result wanted
# The deepest list a search asks for when too few results came back (see run_search).
MAX_WANTED = 16_384
# The most chunks one index is asked for, whatever --k says (SQLite's LIMIT is 64-bit).
MAX_DEPTH = 2**31 - 1

# ``admitted(document_ids, principals)``: those the manifest lets these principals see.
Admitted = Callable[[Sequence[str], Sequence[str]], set[str]]


def check_min_score(min_score: float | None) -> None:
    """Refuse a ``--min-score`` that is not a finite number (ConfigError)."""
    if min_score is not None and not math.isfinite(min_score):
        raise ConfigError(
            f"--min-score {min_score} is not a finite number; give one on the scale of the "
            "mode's scores (hybrid: fused, 0 to about 1; vector: cosine similarity, -1 to "
            "1; keyword: bm25, 0 and up)"
        )


def parse_mode(mode: str) -> SearchMode:
    """``mode`` as a SearchMode, or ConfigError naming the modes."""
    try:
        return SearchMode(mode)
    except ValueError as exc:
        raise ConfigError(
            f"--mode {mode!r} is not a search mode; expected hybrid, vector or keyword"
        ) from exc


@dataclass(frozen=True)
class CallerPrincipals:
    """Who a search runs as: the user (canonical), the user's other names (``[identity]
    aliases``), the groups given and the groups synced for any of those names."""

    user: str | None
    given_groups: tuple[str, ...]
    synced_groups: tuple[SyncedGroup, ...]
    aliases: tuple[str, ...] = ()
    alias_error: str | None = None
    alias_origins: Mapping[str, str] = field(default_factory=dict)  # alias -> where given

    @property
    def groups(self) -> list[str]:
        """Every group searched as: given, then synced (nested ones included)."""
        return [*self.given_groups, *(g.group for g in self.synced_groups)]

    @property
    def principals(self) -> list[str]:
        """The principals searched as: public, each of the user's names, every group."""
        return caller_principals(self.user, self.groups, self.aliases)

    def as_dict(self) -> dict[str, Any]:
        """The caller as JSON: user, given groups and synced groups with their sources
        (and the user's aliases with where each was given, where ``[identity]`` gives
        some)."""
        shown: dict[str, Any] = {"user": self.user}
        if self.aliases:
            shown["aliases"] = list(self.aliases)
            shown["alias_origins"] = {a: self.alias_origins.get(a, "") for a in self.aliases}
        if self.alias_error:
            shown["alias_error"] = self.alias_error
        return shown | {
            "groups": list(self.given_groups),
            "synced_groups": [_synced(g) for g in self.synced_groups],
            "principals": self.principals,
        }


def _synced(group: SyncedGroup) -> dict[str, str]:
    """One synced group for ``--explain --json``: its labels only where the source has them."""
    shown = {"group": group.group, "source": group.source_id}
    if group.display_name:
        shown["display_name"] = group.display_name
    if group.mail:
        shown["mail"] = group.mail
    if group.via:
        shown["via"] = group.via
    return shown


def expand_principals(
    groups_ledger: GroupLedger,
    user: str | None,
    groups: Sequence[str],
    aliases: IdentityAliases | None = None,
) -> CallerPrincipals:
    """The caller's principals, with the groups Headwater synced for ``user``.

    ``user`` is normalized here (``Kim@X.com`` is ``kim@x.com``, as in every ACL), so
    ``--explain`` shows the identity the search runs as; an empty or ambiguous one is a
    ``ConfigError`` (exit code 2), never a silent search as nobody. With ``aliases``, the
    user is their canonical name and searches as every name they have, with the groups
    synced for each.
    """
    if user is None:
        return CallerPrincipals(None, tuple(groups), ())
    table = aliases or IdentityAliases()
    member, others = table.identities_of(normalize_identity(user, "user"))
    synced = tuple(groups_ledger.groups_of(member, *others))
    origins = {a: table.origin_of[a] for a in others if a in table.origin_of}
    return CallerPrincipals(member, tuple(groups), synced, others, table.error, origins)


def run_search(
    sinks: Sequence[tuple[str, Sink]],
    embed: Callable[[str, str], Sequence[float]],
    query: str,
    *,
    user: str | None,
    groups: Sequence[str],
    k: int,
    mode: str,
    sources: Sequence[str],
    per_document: bool = True,
    admitted: Admitted | None = None,
    min_score: float | None = None,
    aliases: Sequence[str] = (),
    scopes: Sequence[Scope] | None = None,
) -> list[SearchResult]:
    """Search ``sinks`` (name, sink) for ``query`` as the caller, within ``sources`` and,
    when ``scopes`` are given, only under one of them (filtered inside each index).

    The caller is ``user`` (and their other names, ``aliases``) with ``groups``.

    ``embed(index_name, text)`` turns the query into that index's vector (each index's live
    generation has its own embedder); it is called only for indexes asked for vectors, so
    a keyword search never loads a model. ``admitted(document_ids, principals)`` names
    those the manifest lets the caller see now; a hit outside it is dropped before the
    top-k is taken (and the indexes are asked deeper, as for any short list).

    Results never pad ``k`` with hits that carry no signal: a hybrid hit only one
    retriever returned, at the floor (score 0: the lowest of its list; see
    ``signal_only``), is left out, and ``min_score`` leaves out every result scoring
    below it (then the indexes are not asked deeper once a hit fell below it).
    """
    search_mode = parse_mode(mode)
    if k < 1:
        raise ConfigError(f"--k {k} must be at least 1")
    check_min_score(min_score)
    if not sources or (scopes is not None and not scopes):
        return []
    plans = _plans(sinks, search_mode)
    wanted_k = max(k * OVERFETCH, 20) if per_document else k
    principals = caller_principals(user, groups, aliases)
    vectors = {n: embed(n, query) for n, _, m in plans if m is SearchMode.VECTOR}
    checked: set[str] = set()  # document ids already put to ``admitted``
    visible: set[str] = set()  # those of them the caller may see

    def gate(document_ids: Sequence[str]) -> set[str]:
        assert admitted is not None
        unknown = [d for d in document_ids if d not in checked]
        if unknown:
            visible.update(admitted(unknown, principals))
            checked.update(unknown)
        return visible

    while True:
        # Fused lists are asked twice as deep, so a chunk ranked low in one list can still
        # reach the top by its rank in another.
        depth = min(wanted_k if len(plans) == 1 else 2 * wanted_k, MAX_DEPTH)
        lists = [
            sink.search(
                SearchRequest(
                    text=query,
                    vector=vectors.get(name) if plan_mode is SearchMode.VECTOR else None,
                    principals=principals,
                    k=depth,
                    mode=plan_mode,
                    sources=list(sources),
                    scopes=None if scopes is None else scope_keys(scopes),
                )
            )
            for name, sink, plan_mode in plans
        ]
        fused = _fused(plans, lists, query, depth)
        if admitted is None:
            hits, below = shown(fused, per_document, min_score)
        else:
            hits, below = admitted_first(fused, gate, k, per_document, min_score)
        # Too few results while some list may hold more (a few long documents took every
        # place, or function-word-only keyword hits were left out): ask deeper, so the
        # caller gets ``k`` whenever ``k`` visible results match.
        exhausted = all(len(found) < depth for found in lists)
        if len(hits) >= k or exhausted or below or wanted_k >= MAX_WANTED:
            return [SearchResult.from_hit(h, query) for h in hits[:k]]
        wanted_k = min(wanted_k * OVERFETCH, MAX_WANTED)


def _plans(
    sinks: Sequence[tuple[str, Sink]], search_mode: SearchMode
) -> list[tuple[str, Sink, SearchMode]]:
    """Which index is asked in which mode: every index serving ``search_mode`` (hybrid:
    vector lists, then keyword lists); ConfigError when no index serves it."""
    vector_sinks = [(n, s) for n, s in sinks if s.capabilities.vector]
    keyword_sinks = [(n, s) for n, s in sinks if s.capabilities.keyword]
    names = ", ".join(repr(n) for n, _ in sinks)
    if search_mode is SearchMode.KEYWORD and not keyword_sinks:
        raise ConfigError(
            f"index {names} has no keyword search; use --mode vector or another index"
        )
    if search_mode is SearchMode.VECTOR and not vector_sinks:
        raise ConfigError(f"index {names} has no vector search; use --mode keyword")
    plans: list[tuple[str, Sink, SearchMode]] = []
    if search_mode is not SearchMode.KEYWORD:
        plans += [(n, sink, SearchMode.VECTOR) for n, sink in vector_sinks]
    if search_mode is not SearchMode.VECTOR:
        plans += [(n, sink, SearchMode.KEYWORD) for n, sink in keyword_sinks]
    return plans


def _fused(
    plans: Sequence[tuple[str, Sink, SearchMode]],
    lists: Sequence[list[SearchHit]],
    query: str,
    depth: int,
) -> list[SearchHit]:
    """The indexes' ``lists`` (one per plan, each at most ``depth`` long), fused; every
    chunk found is kept, so picking each document's best one can still reach ``k``."""
    # A keyword hit that shares no informative word with the query (a question's "how",
    # "do" and "get" only) answers nothing; see search/terms.py.
    lists = [
        hits if plan_mode is SearchMode.VECTOR else answering(query, hits)
        for (*_, plan_mode), hits in zip(plans, lists, strict=True)
    ]
    if len(lists) == 1:
        return lists[0]
    by_mode = {
        m: [hits for (*_, plan_mode), hits in zip(plans, lists, strict=True) if plan_mode is m]
        for m in (SearchMode.VECTOR, SearchMode.KEYWORD)
    }
    # Several indexes answering one mode are merged by rank first; the two modes are
    # then fused by the default method (which never ranks below either part).
    vector_hits, keyword_hits = (
        ranked[0]
        if len(ranked) == 1
        else reciprocal_rank_fusion(ranked, k=DEFAULT_RRF_K, limit=depth)
        for ranked in (by_mode[SearchMode.VECTOR], by_mode[SearchMode.KEYWORD])
    )
    fused = fuse(vector_hits, keyword_hits, limit=len(vector_hits) + len(keyword_hits), query=query)
    return signal_only(fused, vector_hits, keyword_hits) if vector_hits and keyword_hits else fused


def signal_only(
    fused: Sequence[SearchHit], vector: Sequence[SearchHit], keyword: Sequence[SearchHit]
) -> list[SearchHit]:
    """The fused hits less those only one retriever returned that scored at the floor
    (fused score 0 or below): the lowest of the one list that had them, absent from the
    other. Such a hit was there only to fill ``k`` (a vector index always has k nearest
    neighbours); its score says nothing about the query. A hit both lists returned is
    kept whatever its score: each retriever found it."""
    both = {h.chunk_id for h in vector} & {h.chunk_id for h in keyword}
    return [hit for hit in fused if hit.score > 0.0 or hit.chunk_id in both]
