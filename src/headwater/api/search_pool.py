"""Searches in a worker run on at most ``[api] search_threads`` threads at once; the others
wait their turn in arrival order, on the event loop, holding no thread.

The idea: a search over an embedded index is Python that lets go of the interpreter at
every SQLite call. Twenty-five of them at once in one process take turns at one
interpreter, each resuming with another's data in the CPU's caches: 8.7 ms of CPU a
search against 7.0 one at a time and 8.2 two at a time (medians, ``bench/search_threads.py``);
under 50 clients of ``serve --workers 2`` two at a time took p95 from 738 to 450 ms and
searches/s from 185 to 195 (docs/performance.md). Two, not one: a long search (a new index
state's first loads) would hold every other search of its worker behind it. It is also
Elasticsearch's search pool for one CPU (3/2 of the CPUs plus one), the share that
``--workers N`` on N cores gives each worker. An index that answers over the network (a
Qdrant server, pgvector) leaves a search waiting rather than computing: raise it there.

The searches waiting and running are this process's gauges in ``/metrics``; the search
latency histogram counts the wait.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio
import anyio.to_thread

P = ParamSpec("P")
T = TypeVar("T")


class SearchPool:
    """At most ``threads`` searches of this process at once, the rest in arrival order."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._limiter: anyio.CapacityLimiter | None = None  # made on the event loop

    async def run(self, search: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``search(*args, **kwargs)`` on a worker thread once one of the slots is free."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.threads)
        call = functools.partial(search, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    def running(self) -> int:
        """The searches of this process on a thread now."""
        return 0 if self._limiter is None else int(self._limiter.borrowed_tokens)

    def waiting(self) -> int:
        """The searches of this process waiting for a thread now."""
        return 0 if self._limiter is None else self._limiter.statistics().tasks_waiting
