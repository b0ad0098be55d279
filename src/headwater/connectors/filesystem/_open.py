"""The filesystem connector's safe read: open exactly the file the listing saw.

A ``fetch_ref`` carries the listed path and the file's device and inode. The path is
opened one component at a time beneath the root with ``O_NOFOLLOW`` (a link anywhere on
the way raises ELOOP or ENOTDIR), without blocking on a FIFO put in a file's place, and
the open file's ``fstat`` is compared with the listing: a link, a folder, a non-regular
file or another file standing at the path now is ``replaced`` (nothing read, retried by
the next sync); a file grown past ``max_file_bytes`` is ``too_large``.
"""

from __future__ import annotations

import errno
import json
import os
import stat as stat_mode
from pathlib import Path
from typing import BinaryIO

from headwater.connectors.names import printable
from headwater.errors import ItemError


def parse_ref(ref: str) -> tuple[str, tuple[int, int] | None]:
    """A ``fetch_ref``: ``{"path": ..., "file": [dev, ino]}`` as listed, or a bare path."""
    try:
        parsed = json.loads(ref)
    except ValueError:
        return ref, None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("path"), str):
        return ref, None
    dev, ino = parsed["file"]
    return parsed["path"], (int(dev), int(ino))


def open_listed(
    root: Path,
    path: str,
    parts: tuple[str, ...],
    listed: tuple[int, int] | None,
    max_file_bytes: int,
) -> BinaryIO:
    """The regular file at ``parts`` under ``root`` (``path`` as listed), open for reading,
    checked to be the one listed (device and inode ``listed``) and within the size limit."""
    try:
        fd = open_beneath(root, parts)
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
        raise replaced(path, "a link now stands in its path") from exc
    handle = os.fdopen(fd, "rb")
    try:
        st = os.fstat(handle.fileno())
        if not stat_mode.S_ISREG(st.st_mode):
            raise replaced(path, "it is no longer a regular file")
        if listed is not None and (st.st_dev, st.st_ino) != listed:
            raise replaced(path, "another file now stands at its path")
        if st.st_size > max_file_bytes:
            raise ItemError(
                "too_large",
                f"{printable(path)} is {st.st_size} bytes; max_file_bytes is "
                f"{max_file_bytes}. Raise max_file_bytes or exclude the file.",
            )
    except BaseException:
        handle.close()
        raise
    return handle


def open_beneath(root: Path, parts: tuple[str, ...]) -> int:
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


def replaced(path: str, why: str) -> ItemError:
    """The failure of a read that found another thing at the listed path (not permanent)."""
    return ItemError(
        "replaced",
        f"{printable(path)} changed between listing and read ({why}); nothing was read. "
        "The next sync lists it again.",
        permanent=False,
    )
