"""What an open sqlite index keeps in memory between searches, each part built at first need.

- ``shares``: each ACL expression's share of the index, a planning hint (``_search``);
- ``term_counts``: how many chunks hold a word, for the keyword split (``_keyword``);
- ``codes()``: the 1-bit codes of every chunk (``_ann``), loaded at the first vector search
  that needs candidates;
- ``copies()``: the int8 vector copies (``_copies``) and ``memory()``: the posting lists,
  row lengths and ACL listings (``_postings``). Both read much of the index once, which
  pays in a process that searches again (``serve``, a script), not in a one-shot
  ``headwater search``: they exist from the sink's second search of their kind.

Every part follows the index's writes from any process on its own (by version or state),
so none can make a search see what its own read snapshot does not hold. numpy and these
modules load with the first part that needs them, not with the sink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.sinks.sqlite._keyword import TermCounts
from headwater.sinks.sqlite._options import SqliteOptions
from headwater.sinks.sqlite._search import SearchShares

if TYPE_CHECKING:
    from headwater.sinks.sqlite._ann import CodeCache
    from headwater.sinks.sqlite._copies import VectorCopies
    from headwater.sinks.sqlite._postings import SearchMemory

# The copies and the memory exist from an open index's second search of their kind.
LOADED_FROM = 2
MB = 1024 * 1024


class SearchCaches:
    """The in-memory aids of one open index (see the module's docstring)."""

    def __init__(self, options: SqliteOptions, dimension: int) -> None:
        self.options = options
        self.dimension = dimension
        self.shares = SearchShares()
        self.term_counts = TermCounts()
        self._codes: CodeCache | None = None
        self._copies: VectorCopies | None = None
        self._memory: SearchMemory | None = None
        self._vector_searches = 0
        self._searches = 0

    def codes(self) -> CodeCache:
        """The 1-bit codes of this index."""
        if self._codes is None:
            from headwater.sinks.sqlite._ann import CodeCache

            self._codes = CodeCache(self.dimension)
        return self._codes

    def copies(self) -> VectorCopies | None:
        """The int8 vector copies, counting a vector search; None when turned off and
        for the sink's first vector search."""
        self._vector_searches += 1
        if self._vector_searches < LOADED_FROM or self.options.vector_copies_mb <= 0:
            return None
        if self._copies is None:
            from headwater.sinks.sqlite._copies import VectorCopies

            self._copies = VectorCopies(self.dimension, self.options.vector_copies_mb * MB)
        return self._copies

    def memory(self) -> SearchMemory | None:
        """The posting lists and ACL listings, counting a search; None when turned off
        and for the sink's first search."""
        self._searches += 1
        if self._searches < LOADED_FROM or self.options.search_memory_mb <= 0:
            return None
        if self._memory is None:
            from headwater.sinks.sqlite._postings import SearchMemory

            self._memory = SearchMemory(self.options.search_memory_mb * MB)
        return self._memory
