"""``watch = true``: inotify (through ``watchdog``) on a filesystem source's root, and
IMAP IDLE on an imap source's mailboxes (``hints.idle``: any change is a scope hint).

While ``headwater run`` or ``serve --with-scheduler`` runs, one ``watchdog`` observer
watches the root of every ``watch = true`` filesystem source, recursively. A file
created, written, deleted or moved becomes a hint for its path (a move: a delete hint for
the old path, a change hint for the new one); a folder created, deleted or moved is a
scope hint (its files came or went without events of their own), and so is an overflow:
more than ``limit`` paths waiting in this process, or the kernel's inotify queue
overflowing (watchdog logs it, and a log handler here hears it). Events are collected in
memory and flushed to the manifest's hint queue every ``FLUSH_S`` (a burst of saves is one
transaction), so hints reach the manifest within a fraction of a second; the scheduler is
woken then. Paths under the workspace's own ``state_dir`` are ignored (the manifest's own
writes must not become hints). The periodic scan stays the guarantee: events lost with a
killed process are found by the next scan.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from headwater.hints.idle import MailboxIdler
from headwater.hints.queue import queue
from headwater.manifest.hints import CHANGED, DELETED
from headwater.runtime import Runtime
from headwater.runtime.sources import close_connector

log = logging.getLogger("headwater.hints")

FLUSH_S = 0.2
LIMIT = 10_000  # paths waiting in memory before the watcher gives up on them: a scan
ORIGIN = "watch"
IDLE_ORIGIN = "idle"
INOTIFY_LOGGER = "watchdog.observers.inotify_c"


class _Pending:
    """One source's events not yet in the manifest: path -> kind, or "overflowed"."""

    def __init__(self, limit: int, origin: str = ORIGIN) -> None:
        self.limit = limit
        self.origin = origin
        self.lock = threading.Lock()
        self.paths: dict[str, str] = {}
        self.overflowed = False

    def add(self, path: str, kind: str) -> None:
        with self.lock:
            if self.overflowed:
                return
            self.paths[path] = kind
            if len(self.paths) > self.limit:
                self.overflow()

    def overflow(self) -> None:
        self.paths.clear()
        self.overflowed = True

    def changed(self) -> None:
        """Something changed, nobody said what: a scope hint at the next flush."""
        with self.lock:
            self.overflow()

    def take(self) -> tuple[dict[str, str], bool]:
        with self.lock:
            paths, overflowed = self.paths, self.overflowed
            self.paths, self.overflowed = {}, False
        return paths, overflowed


class _Handler(FileSystemEventHandler):
    def __init__(self, root: Path, state_path: Path | None, pending: _Pending) -> None:
        self.root, self.state_path, self.pending = root, state_path, pending

    def _rel(self, raw: bytes | str) -> str | None:
        path = Path(raw.decode() if isinstance(raw, bytes) else raw)
        if self.state_path is not None and (
            path == self.state_path or self.state_path in path.parents
        ):
            return None
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def on_any_event(self, event: FileSystemEvent) -> None:
        if isinstance(event, DirCreatedEvent | DirDeletedEvent | DirMovedEvent):
            if self._rel(event.src_path) not in (None, "."):
                with self.pending.lock:
                    self.pending.overflow()  # its files moved without events: a scan
            return
        if isinstance(event, FileMovedEvent):
            self._file(event.src_path, DELETED)
            self._file(event.dest_path, CHANGED)
        elif isinstance(event, FileDeletedEvent):
            self._file(event.src_path, DELETED)
        elif isinstance(event, FileCreatedEvent | FileModifiedEvent | FileClosedEvent):
            self._file(event.src_path, CHANGED)

    def _file(self, raw: bytes | str, kind: str) -> None:
        rel = self._rel(raw)
        if rel:
            self.pending.add(rel, kind)


class _KernelOverflow(logging.Handler):
    """Hears watchdog's "Inotify queue overflowed" warning: every watched source scans."""

    def __init__(self, pendings: list[_Pending]) -> None:
        super().__init__(logging.WARNING)
        self.pendings = pendings

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            for pending in self.pendings:
                with pending.lock:
                    pending.overflow()


class Watcher:
    """Watches every ``watch = true`` source of a runtime until ``stop``."""

    def __init__(
        self,
        runtime: Callable[[], Runtime],
        *,
        on_queued: Callable[[], None] = lambda: None,
        limit: int = LIMIT,
    ) -> None:
        self.runtime = runtime
        self.on_queued = on_queued
        self.limit = limit
        self.observer: Observer | None = None  # type: ignore[valid-type]
        self.pending: dict[str, _Pending] = {}
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self._overflow: _KernelOverflow | None = None
        self._idlers: list[MailboxIdler] = []

    def start(self) -> Watcher:
        """Start watching; a no-op when no source has ``watch = true``."""
        rt = self.runtime()
        sections = [s for s in rt.config.source if s.watch]
        if not sections:
            return self
        observer = Observer()
        for section in sections:
            connector = rt.sources.connector(section.id)
            try:
                if section.type == "imap":
                    self._idle(section.id, connector)
                    continue
                root: Path = connector.root  # type: ignore[attr-defined]
                state: Path | None = getattr(connector, "state_path", None)
            finally:
                close_connector(connector)
            pending = self.pending[section.id] = _Pending(self.limit)
            observer.schedule(_Handler(root, state, pending), str(root), recursive=True)
            log.info("watching %s for source %s", root, section.id)
        self._overflow = _KernelOverflow(list(self.pending.values()))
        logging.getLogger(INOTIFY_LOGGER).addHandler(self._overflow)
        observer.start()
        self.observer = observer
        self._flusher = threading.Thread(target=self._flush_loop, name="headwater-watch")
        self._flusher.start()
        return self

    def _idle(self, source_id: str, connector: object) -> None:
        """IDLE on each mailbox of an imap source (its connector's address and mailboxes)."""
        pending = self.pending[source_id] = _Pending(self.limit, IDLE_ORIGIN)
        address = getattr(connector, "address")  # noqa: B009  (the imap connector's)
        for mailbox in getattr(connector, "options").mailboxes:  # noqa: B009
            self._idlers.append(MailboxIdler(address, mailbox, pending.changed, self._stop).start())
            log.info("IDLE on %s of %s for source %s", mailbox, address.where, source_id)

    def stop(self) -> None:
        """Stop watching, after a last flush."""
        self._stop.set()
        for idler in self._idlers:
            idler.join()
        if self.observer is not None:
            self.observer.stop()
            self.observer.join()
        if self._flusher is not None:
            self._flusher.join()
        if self._overflow is not None:
            logging.getLogger(INOTIFY_LOGGER).removeHandler(self._overflow)

    def _flush_loop(self) -> None:
        while not self._stop.wait(FLUSH_S):
            self.flush()
        self.flush()

    def flush(self) -> None:
        """Write what the sources' events named to the hint queue."""
        queued = False
        for source_id, pending in self.pending.items():
            paths, overflowed = pending.take()
            try:
                rt = self.runtime()
                if overflowed:
                    log.info("watcher of %s: a scan is scheduled", source_id)
                    queued |= bool(queue(rt, source_id, origin=pending.origin, scope=True))
                for kind in (DELETED, CHANGED):
                    ids = [p for p, k in paths.items() if k == kind]
                    if ids:
                        queued |= bool(queue(rt, source_id, ids, kind=kind, origin=ORIGIN))
            except Exception:  # the manifest is down: these events are lost, the scan stays
                log.exception("could not queue the watcher's hints of %s", source_id)
        if queued:
            self.on_queued()
