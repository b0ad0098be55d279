"""Progress for long work: Rich bars on a terminal, a log line every 10 s otherwise.

A ``Reporter`` is fed by the core's callbacks (the sync runner's ``Progress``, the
indexer's ``IndexProgress``, the ``CountProgress`` of prune enumeration and reconcile:
``prune docs: 12000 objects enumerated, 950.0 objects/s``) and by ``phase`` for steps
without counters. Each tracked line renders to one text (``indexing: 1200/3490
documents, 5000 chunks, 41.0 chunks/s, ETA 55 s``; a sync whose source's API gave a total:
``1200 items seen (…), 80.0 items/s, 40000 expected, ETA 485 s``): on a terminal it is a Rich progress
row that ticks every 100 ms; on a pipe, or with ``--json``, a ticker thread logs every
line through ``headwater.progress`` every ``HEADWATER_PROGRESS_INTERVAL`` seconds
(default 10), so no phase is silent longer than that.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from headwater.errors import ConfigError
from headwater.indexer.report import IndexProgress
from headwater.manifest.records import RunCounts

log = logging.getLogger("headwater.progress")

# The first word of a counted line's name: what it counts.
COUNT_UNITS = {"prune": ("objects", "enumerated"), "reconcile": ("documents", "compared")}
INTERVAL_ENV = "HEADWATER_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 10.0


def interval_s() -> float:
    """Seconds between progress lines: ``HEADWATER_PROGRESS_INTERVAL`` or the default of 10."""
    raw = os.environ.get(INTERVAL_ENV)
    if raw is None:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(
            f"{INTERVAL_ENV}={raw!r} is not a positive number of seconds; "
            f"unset it for the default of {DEFAULT_INTERVAL_S:.0f}."
        )
    return value


def _eta(remaining: float, rate: float) -> str:
    return f"ETA {remaining / rate:.0f} s" if rate > 0 and remaining > 0 else "ETA -"


@dataclass
class _Line:
    started: float = field(default_factory=time.monotonic)
    text: str = ""
    done: float = 0.0
    total: float | None = None


class Reporter:
    """Tracks named lines; shows them as Rich rows (terminal) or periodic log lines."""

    def __init__(self, console: Console, *, terminal: bool, interval: float) -> None:
        self._terminal = terminal
        self._interval = interval
        self._lines: dict[str, _Line] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._index_base = (0, 0)  # documents, chunks of finished drains
        self._index_last = IndexProgress(0, 0, 0)
        self._sync_mark = time.monotonic()  # when the current source's run began, at most
        self._bar: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._ticker: threading.Thread | None = None
        if terminal:
            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            )

    def __enter__(self) -> Reporter:
        if self._bar is not None:
            self._bar.start()
        else:
            self._ticker = threading.Thread(
                target=self._tick, name="headwater-progress", daemon=True
            )
            self._ticker.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.stop()
        if self._ticker is not None:
            self._ticker.join()

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                lines = [(name, line.text) for name, line in self._lines.items()]
            for name, text in lines:
                log.info("%s: %s", name, text)

    def _update(self, name: str, render: Callable[[_Line], None]) -> None:
        with self._lock:
            line = self._lines.setdefault(name, _Line())
            render(line)
            text, done, total = line.text, line.done, line.total
        if self._bar is not None:
            task = self._tasks.get(name)
            if task is None:
                task = self._tasks[name] = self._bar.add_task(name, total=total, detail="")
            self._bar.update(task, completed=done, total=total, detail=text)

    def start(self, name: str) -> None:
        """A line's work begins now (the scheduler's runs: its rate counts from here)."""
        self._update(name, lambda line: setattr(line, "text", "starting"))

    def finish(self, name: str) -> None:
        """The line's work is done: stop logging it (its last row stays on a terminal).
        A finished ``indexing`` line starts its next drain's counts from zero."""
        with self._lock:
            self._lines.pop(name, None)
            if name == "indexing":
                self._index_base, self._index_last = (0, 0), IndexProgress(0, 0, 0)

    # -- feeds ---------------------------------------------------------------------------

    def sync(self, source: str, counts: RunCounts) -> None:
        """The sync runner's ``Progress`` callback: items seen per source, after each batch
        (of the expected total, with an ETA, when the source's API gave one)."""

        name = f"sync {source}"
        with self._lock:
            if name not in self._lines:  # this source began when the previous one last moved
                self._lines[name] = _Line(started=self._sync_mark)
            self._sync_mark = time.monotonic()

        def render(line: _Line) -> None:
            rate = counts.seen / max(time.monotonic() - line.started, 1e-6)
            line.done = counts.seen
            line.text = (
                f"{counts.seen} items seen ({counts.new} new, {counts.changed} changed, "
                f"{counts.deleted} deleted, {counts.failed} failed), {rate:.1f} items/s"
            )
            if counts.expected is not None:  # the source's API said how many to expect
                line.total = max(counts.expected, counts.seen)
                line.text += f", {counts.expected} expected, " + _eta(
                    counts.expected - counts.seen, rate
                )

        self._update(name, render)

    def index(self, progress: IndexProgress) -> None:
        """The indexer's callback: documents done of the pending set, chunks written."""
        with self._lock:
            # a new drain opens at (0, total, 0): earlier drains are finished. Its first
            # batch's slices report (0, total, chunks): the same drain, counting chunks
            if progress.documents_done == 0 and progress.chunks == 0:
                docs, chunks = self._index_base
                last = self._index_last
                self._index_base = (docs + last.documents_done, chunks + last.chunks)
            self._index_last = progress
            base_docs, base_chunks = self._index_base
        done = base_docs + progress.documents_done
        total = base_docs + progress.documents_total
        chunks = base_chunks + progress.chunks

        def render(line: _Line) -> None:
            elapsed = max(time.monotonic() - line.started, 1e-6)
            line.done, line.total = done, total
            line.text = (
                f"{done}/{total} documents, {chunks} chunks, {chunks / elapsed:.1f} chunks/s, "
                + _eta(total - done, done / elapsed)
            )

        self._update("indexing", render)

    def count(self, name: str, done: int, final: bool) -> None:
        """A ``CountProgress`` callback: items so far of work without a known total."""
        unit, verb = COUNT_UNITS.get(name.split(" ", 1)[0], ("items", "done"))

        def render(line: _Line) -> None:
            rate = done / max(time.monotonic() - line.started, 1e-6)
            line.done = done
            line.text = f"{done} {unit} {verb}, {rate:.1f} {unit}/s" + (", done" if final else "")

        self._update(name, render)
        if final:
            if self._bar is None:  # off a terminal: the total is logged once, at the end
                with self._lock:
                    text = self._lines[name].text
                log.info("%s: %s", name, text)
            self.finish(name)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """A step without counters: a spinner with elapsed time, or 'running, N s elapsed'."""

        def render(line: _Line) -> None:
            line.text = "running"

        self._update(name, render)
        ticking = threading.Event()

        def elapsed() -> None:
            while not ticking.wait(1.0):
                self._update(
                    name,
                    lambda ln: setattr(
                        ln, "text", f"running, {time.monotonic() - ln.started:.0f} s elapsed"
                    ),
                )

        thread = threading.Thread(target=elapsed, daemon=True)
        thread.start()
        try:
            yield
        finally:
            ticking.set()
            thread.join()
            self._update(name, lambda ln: setattr(ln, "text", "done"))
            self.finish(name)


def log_reporter(console: Console) -> Reporter:
    """Progress as log lines only (``headwater run``: a daemon's runs overlap)."""
    return Reporter(console, terminal=False, interval=interval_s())


def reporter(console: Console, *, as_json: bool) -> Reporter:
    """Rich rows when ``console`` is a terminal and the output is not JSON; log lines else."""
    return Reporter(console, terminal=console.is_terminal and not as_json, interval=interval_s())
