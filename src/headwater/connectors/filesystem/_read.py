"""The filesystem connector's read of one listed file: never a link, never another file.

A ``fetch_ref`` carries the path and the device and inode the listing saw. The read opens
the path one component at a time with ``O_NOFOLLOW`` (so no link is followed at read
time; with ``follow_symlinks`` the real location is resolved first and must still be in
the source's scope), then compares the open file's ``fstat`` with the listing: a file
swapped for a link, a folder swapped for a link, or any other file put in its place
between listing and read is not read (``replaced``, retried by the next sync).
"""

from __future__ import annotations

import errno
import json
import os
import stat as stat_mode
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, Protocol

from headwater.connectors.names import printable
from headwater.errors import ItemError


class _Reader(Protocol):
    """What the read uses of ``FilesystemConnector``."""

    options: Any
    root: Path
    files_read: int

    def in_scope(self, object_id: str) -> bool: ...
    def _real_parts(self, path: str) -> tuple[str, ...] | None: ...


def fetch_ref(rel: str, st: os.stat_result) -> str:
    """``json.dumps({"path": rel, "file": [dev, ino]})``, built without the encoder."""
    return f'{{"path": {encode_basestring_ascii(rel)}, "file": [{st.st_dev}, {st.st_ino}]}}'


def read_listed(connector: _Reader, ref: str) -> bytes:
    """The bytes of the regular file the listing saw at ``ref``, never a link's target
    outside the source's scope and never another file put in its place since."""
    path, listed = _parse_ref(ref)
    parts = _parts_to_read(connector, path)
    try:
        fd = _open_beneath(connector.root, parts)
    except FileNotFoundError as exc:
        raise ItemError(
            "vanished", f"{printable(path)} disappeared while syncing", permanent=False
        ) from exc
    except PermissionError as exc:
        raise ItemError(
            "permission_denied",
            f"{printable(path)}: permission denied; grant read access to this user, then "
            "`headwater sync --full` (or `headwater dlq redrive ID`) reads it again.",
        ) from exc
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise _replaced(path, "a link now stands in its path") from exc
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat_mode.S_ISREG(st.st_mode):
            raise _replaced(path, "it is no longer a regular file")
        if listed is not None and (st.st_dev, st.st_ino) != listed:
            raise _replaced(path, "another file now stands at its path")
        if st.st_size > connector.options.max_file_bytes:
            raise ItemError(
                "too_large",
                f"{printable(path)} is {st.st_size} bytes; max_file_bytes is "
                f"{connector.options.max_file_bytes}. Raise max_file_bytes or exclude the file.",
            )
        connector.files_read += 1
        return handle.read(connector.options.max_file_bytes + 1)


def _parts_to_read(connector: _Reader, path: str) -> tuple[str, ...]:
    """The path parts to open under the root: ``path`` itself, or with
    ``follow_symlinks`` its real location, which must still be in the source's scope."""
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise ItemError("outside_root", f"{printable(path)} resolves outside the root")
    if not connector.options.follow_symlinks:
        return parts
    real = connector._real_parts(str(connector.root.joinpath(*parts)))
    if real is None or not connector.in_scope("/".join(real)):
        raise ItemError(
            "link_out_of_scope",
            f"{printable(path)} now leads outside this source's root, include and "
            "exclude; it was not read. Point the link inside the source, or exclude it.",
        )
    return real


def _open_beneath(root: Path, parts: tuple[str, ...]) -> int:
    """``parts`` under ``root`` opened read-only, one component at a time with
    ``O_NOFOLLOW`` (a link anywhere raises ELOOP or ENOTDIR), without blocking on a
    FIFO put in a file's place."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in parts[:-1]:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
        return os.open(parts[-1] if parts else ".", flags, dir_fd=fd)
    finally:
        os.close(fd)


def _replaced(path: str, why: str) -> ItemError:
    return ItemError(
        "replaced",
        f"{printable(path)} changed between listing and read ({why}); nothing was read. "
        "The next sync lists it again.",
        permanent=False,
    )


def _parse_ref(ref: str) -> tuple[str, tuple[int, int] | None]:
    """A ``fetch_ref``: ``{"path": ..., "file": [dev, ino]}`` as listed, or a bare path."""
    try:
        parsed = json.loads(ref)
    except ValueError:
        return ref, None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("path"), str):
        return ref, None
    dev, ino = parsed["file"]
    return parsed["path"], (int(dev), int(ino))
