"""Searches in a worker run at most ``[api] search_threads`` at once; the others wait their
turn in arrival order, on the event loop, holding no thread. With 0 they run one at a time
on the event loop's own thread.

The idea: a search over an embedded index is Python that lets go of the interpreter at
every SQLite call. Twenty-five of them at once in one process take turns at one
interpreter, each resuming with another's data in the CPU's caches: 8.7 ms of CPU a
search against 7.0 one at a time and 8.2 two at a time (medians, ``bench/search_threads.py``);
under 50 clients of ``serve --workers 2`` two at a time took p95 from 738 to 450 ms and
searches/s from 185 to 195 (docs/performance.md). Even two on threads take turns with the
event loop at each SQLite call and hand each search to a thread and back: on the loop's own
thread, one at a time, the same load got 14 % more searches a second at a 15 % lower p95
(``bench/api_ab.py``, 8 blocks of 8 faster). That is where nothing waits: ``auto`` picks
it when every index is searched in the process (``sqlite``, Qdrant's local mode), the
manifest a SQLite file and the model in the process. A search that waits on a server (a
Qdrant server, pgvector, a PostgreSQL manifest, an embedding API) would hold the whole
worker meanwhile: there ``auto`` is 2, Elasticsearch's search pool for one CPU, the share
that ``--workers N`` on N cores gives each worker (two, not one: a long search would hold
every other search of its worker behind it); raise it where searches mostly wait.

The searches waiting and running are this process's gauges in ``/metrics``; the search
latency histogram counts the wait.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio
import anyio.to_thread

from headwater.config import HeadwaterConfig, IndexSection

P = ParamSpec("P")
T = TypeVar("T")


# What ``auto`` is where a search may wait on a server: a search waiting holds no CPU.
WAITING_THREADS = 2
IN_PROCESS_EMBEDDERS = ("local", "fake")


def threads_for(config: HeadwaterConfig) -> int:
    """``[api] search_threads``, ``auto`` resolved: 0 (one search at a time on the event
    loop's thread) when a search is CPU work in this process only (every index embedded,
    the manifest a SQLite file, the model in process), else 2, so that a
    search waiting on a server does not hold its whole worker."""
    wanted = config.api.search_threads
    if wanted != "auto":
        return wanted
    url = config.manifest.url
    in_process = (
        all(_searched_in_process(index) for index in config.index)
        and (url is None or url.startswith("sqlite"))
        and config.embedder.type in IN_PROCESS_EMBEDDERS
    )
    return 0 if in_process else WAITING_THREADS


def _searched_in_process(index: IndexSection) -> bool:
    """The embedded ``sqlite`` index, or Qdrant's local mode (no ``url``: a folder or
    memory, searched by the client library in this process)."""
    if index.type == "sqlite":
        return True
    return index.type == "qdrant" and not (index.model_extra or {}).get("url")


class SearchPool:
    """At most ``threads`` searches of this process at once, the rest in arrival order;
    ``threads = 0``: one at a time on the event loop's own thread."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._limiter: anyio.CapacityLimiter | None = None  # made on the event loop
        self._turn: anyio.Lock | None = None  # threads = 0: the loop's one search slot

    async def run(self, search: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``search(*args, **kwargs)`` once one of the slots is free: on a worker thread, or
        on the event loop's thread when ``threads`` is 0."""
        call = functools.partial(search, *args, **kwargs)
        if self.threads == 0:
            return await self._on_the_loop(call)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.threads)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    async def _on_the_loop(self, call: Callable[[], T]) -> T:
        if self._turn is None:
            self._turn = anyio.Lock(fast_acquire=True)  # the pass below is the one yield
        async with self._turn:  # waiters take their turn in arrival order
            # One pass of the loop before the search: what arrived meanwhile is read and
            # queues behind; without it, the requests read at once would run back to back
            # in whatever order the loop resumed them.
            await anyio.sleep(0)
            return call()

    def running(self) -> int:
        """The searches of this process running now."""
        if self.threads == 0:
            return 0 if self._turn is None else int(self._turn.locked())
        return 0 if self._limiter is None else int(self._limiter.borrowed_tokens)

    def waiting(self) -> int:
        """The searches of this process waiting for their turn now."""
        if self.threads == 0:
            return 0 if self._turn is None else self._turn.statistics().tasks_waiting
        return 0 if self._limiter is None else self._limiter.statistics().tasks_waiting
