"""The filesystem connector's targeted read: named paths, as a listing would see them now.

Each selected path yields a document (its ``mtime_ns:size`` version and a lazy
``fetch_ref``, exactly as the walk yields it), ``Deleted`` when nothing a listing would
yield is there any more (no file, a folder in its place, a file behind a link the
listing does not follow), or the failure a listing would record (a link leading out of
scope, a file too large). A path the config does not select, one under the workspace's
own ``state_dir``, or one that is not a plain relative path yields nothing.
"""

from __future__ import annotations

import os
import stat as stat_mode
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from headwater.types import Deleted, Failure, SourceDocument


class _Listing(Protocol):
    """What the targeted read uses of ``FilesystemConnector`` (its listing's own rules)."""

    options: Any
    root: Path
    state_path: Path | None

    def in_scope(self, object_id: str) -> bool: ...
    def _real_parts(self, path: str) -> tuple[str, ...] | None: ...
    def _unlistable(self, parts: tuple[str, ...], exc: OSError, what: str = ...) -> Failure: ...
    def _out_of_scope(
        self, parts: tuple[str, ...], path: str, *, folder: bool = ...
    ) -> Failure | None: ...
    def _item(self, rel: str, st: os.stat_result) -> SourceDocument | Failure: ...


def refetch(
    conn: _Listing, object_ids: Sequence[str]
) -> Iterator[SourceDocument | Deleted | Failure]:
    """The current state of each selected path of ``object_ids``."""
    follow = conn.options.follow_symlinks
    for object_id in object_ids:
        parts = tuple(object_id.split("/"))
        if not conn.in_scope(object_id) or any(p in ("", ".", "..") for p in parts):
            continue
        path = conn.root.joinpath(*parts)
        if conn.state_path is not None and conn.state_path in path.parents:
            continue  # Headwater's own state is never a document
        real = conn._real_parts(str(path))
        if real is None and not follow:
            continue  # a link above it leads out of the root: a listing never gets there
        if not follow and real != parts:
            yield Deleted(object_id=object_id)  # behind a link: a listing skips it
            continue
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            yield Deleted(object_id=object_id)
            continue
        except OSError as exc:
            yield conn._unlistable(parts, exc, "entry")
            continue
        if not stat_mode.S_ISREG(st.st_mode):
            yield Deleted(object_id=object_id)  # a folder (or a FIFO) now: no file here
            continue
        if follow and (refused := conn._out_of_scope(parts, str(path))):
            yield refused
            continue
        yield conn._item(object_id, st)  # object_id is "/".join(parts)
