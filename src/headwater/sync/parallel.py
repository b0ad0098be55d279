"""Several sources' runs at once: at most ``limit`` threads, results in the given order.

``headwater sync`` of many sources spends most of its time waiting on the sources (an
unreachable host's connect timeouts, a slow API); ``run_each`` runs up to ``limit`` of
them at once, each in its own thread (each run takes its own lease and heartbeat in
``SyncRunner``; the manifest engine and the content store are shared, as in the
scheduler's thread pool). Items start in order; once ``cancel`` is set (Ctrl-C) or an
item raised, no further item starts, the ones running finish (a cancelled run stops
after its current batch), and the first exception, in the items' order, is raised.
The threads are daemons: a second Ctrl-C (``KeyboardInterrupt`` in the main thread)
leaves at once instead of waiting for them, and the next sync takes their leases over
(their owner is provably gone). With ``limit`` 1 or a single item, everything runs in
the calling thread, exactly as a plain loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def run_each(
    items: Sequence[T], work: Callable[[T], R], *, limit: int, cancel: threading.Event
) -> list[R | None]:
    """``work(item)`` for each item, at most ``limit`` at once; ``None`` for an item never
    started (cancelled first). Raises the first exception an item raised, once all the
    started items are done."""
    if limit <= 1 or len(items) <= 1:
        results: list[R | None] = []
        for item in items:
            if cancel.is_set():
                break
            results.append(work(item))
        return results + [None] * (len(items) - len(results))
    outcomes: list[R | None] = [None] * len(items)
    errors: list[BaseException | None] = [None] * len(items)
    slots = threading.Semaphore(limit)
    failed = threading.Event()

    def body(index: int, item: T) -> None:
        try:
            outcomes[index] = work(item)
        except BaseException as exc:  # handed to the caller's thread below
            errors[index] = exc
            failed.set()
        finally:
            slots.release()

    threads: list[threading.Thread] = []
    for index, item in enumerate(items):
        slots.acquire()  # interruptible: a second Ctrl-C raises here
        if cancel.is_set() or failed.is_set():
            slots.release()
            break
        thread = threading.Thread(
            target=body, args=(index, item), name=f"headwater-sync-{index}", daemon=True
        )
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return outcomes
