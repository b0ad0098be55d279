"""Container files whose members are documents: mailboxes (mbox) and archives (zip, tar).

A container is not parsed into one document: each member becomes a document of its own,
named ``<container>!/<member>`` (``mail.mbox!/<Message-ID>``, ``docs.zip!/guide/a.md``),
so a member that leaves the container leaves the index by the source's usual prune.
``members`` yields each member's bytes and a version hint (a hash of its bytes), one at
a time, under ``ContainerLimits``: the zip-bomb limits of ``_zip`` (count, total, ratio,
methods), a cap per member, and a nesting depth (an archive inside an archive is opened,
one level by default). A member past the per-member cap is a ``MemberFailure``; a
container past a whole-container limit, or one that cannot be read, raises ``ItemError``.
"""

from __future__ import annotations

import email.parser
import email.policy
import email.utils
import hashlib
import io
import mailbox
import os
import re
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from headwater.errors import ItemError
from headwater.pipeline.parse._zip import ZipLimits, check_declared, inflate, too_large

SEPARATOR = "!/"
"""Between a container's name and its member's path in a member's object id."""

_HEADERS = email.parser.BytesHeaderParser(policy=email.policy.compat32)
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
# The last character of every name ``container_kind`` may answer for, either case, and of
# a name ending in a folder ("/", "/."): any other ending is answered at once (no character
# outside them lowers to one of them: tests/core/test_noop_fast_paths.py checks all of Unicode).
_LAST_CHARACTERS = frozenset("xXpPrRzZ2/.")


@dataclass(frozen=True)
class ContainerLimits:
    """What one container may hold: ``zip`` limits for all members together (entries,
    unpacked bytes, ratio), a cap per member and the depth of containers in containers."""

    zip: ZipLimits = field(default_factory=ZipLimits)
    max_member_bytes: int = 64 * 1024 * 1024
    max_depth: int = 2  # the container itself, and one level of containers inside it


@dataclass(frozen=True)
class Member:
    """One member: its path inside the container, its bytes and a version hint."""

    path: str
    content: bytes
    version: str
    media_type: str | None = None


@dataclass(frozen=True)
class MemberFailure:
    """A member that is not read (past the per-member cap, password-protected, or a
    nested container that failed); the rest of the container is. ``size`` is its byte
    count unpacked, when the container says it."""

    path: str
    error: ItemError
    size: int | None = None


def container_kind(name: str) -> str | None:
    """``"mbox"``, ``"zip"`` or ``"tar"`` for a container's file name; None otherwise."""
    if name[-1:] not in _LAST_CHARACTERS:  # every file a listing finds asks: most are not
        return None
    # the name as it ends: the last component's suffix, without building a path
    lower = (PurePosixPath(name).name if name.endswith(("/", "/.")) else name).lower()
    if lower.endswith(".mbox"):
        return "mbox"
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith(_TAR_SUFFIXES):
        return "tar"
    return None


def members(
    content: bytes, name: str, limits: ContainerLimits | None = None, *, depth: int = 1
) -> Iterator[Member | MemberFailure]:
    """Every member of the container ``name``; a member that is itself a container is
    opened in turn (``inner.zip!/a.md``) while ``depth`` allows."""
    limits = limits or ContainerLimits()
    kind = container_kind(name)
    if kind is None:
        raise ItemError("unsupported_type", f"{name!r} is not a mailbox, zip or tar archive")
    reader = {"mbox": _mbox, "zip": _zip, "tar": _tar}[kind]
    for found in reader(content, name, limits):
        if isinstance(found, MemberFailure) or container_kind(found.path) is None:
            yield found
        elif depth >= limits.max_depth:
            yield MemberFailure(
                found.path,
                ItemError(
                    "too_large",
                    f"{name!r} holds the container {found.path!r} at nesting depth {depth + 1}"
                    f"; containers are opened {limits.max_depth} deep. Unpack it at the "
                    "source, or exclude it.",
                ),
                len(found.content),
            )
        else:
            try:
                for inner in members(found.content, found.path, limits, depth=depth + 1):
                    path = f"{found.path}{SEPARATOR}{inner.path}"
                    if isinstance(inner, MemberFailure):
                        yield MemberFailure(path, inner.error, inner.size)
                    else:
                        yield Member(path, inner.content, inner.version, inner.media_type)
            except ItemError as exc:
                yield MemberFailure(found.path, exc, len(found.content))


def _version(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()[:32]


def _over_member_cap(path: str, size: int, name: str, limits: ContainerLimits) -> MemberFailure:
    return MemberFailure(
        path,
        ItemError(
            "too_large",
            f"{name!r} member {path!r} is {size:,} bytes; the limit per member is "
            f"{limits.max_member_bytes:,}. Unpack it at the source, or exclude it.",
        ),
        size,
    )


def _clean(path: str) -> str:
    """A member path without a leading ``/`` or ``./`` (the id must not depend on them)."""
    return re.sub(r"^(?:\./|/)+", "", path)


def _zip(content: bytes, name: str, limits: ContainerLimits) -> Iterator[Member | MemberFailure]:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            entries = [info for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ItemError("parse_error", f"{name!r} is not a readable zip archive: {exc}") from exc
    check_declared(entries, "zip", limits.zip)  # count, total, ratio, methods: all first
    left = limits.zip.max_unpacked_bytes
    for info in entries:
        path = _clean(info.filename)
        if info.file_size > limits.max_member_bytes:
            yield _over_member_cap(path, info.file_size, name, limits)
            continue
        if info.flag_bits & 0x1:
            yield MemberFailure(
                path,
                ItemError(
                    "encrypted",
                    f"{name!r} member {path!r} is password-protected; it is not read. Remove "
                    "the password at the source to index it, or exclude the archive.",
                ),
                info.file_size,
            )
            continue
        try:
            data = inflate(content, info, left, "zip")
        except ItemError as exc:
            if exc.error_class != "parse_error":
                raise  # past the whole archive's limits: nothing more is read
            yield MemberFailure(path, exc, info.file_size)
            continue
        left -= len(data)
        yield Member(path, data, _version(data))


def _tar(content: bytes, name: str, limits: ContainerLimits) -> Iterator[Member | MemberFailure]:
    total = count = 0
    floor, ratio = limits.zip.ratio_floor_bytes, limits.zip.max_ratio
    try:
        with tarfile.open(fileobj=io.BytesIO(content), mode="r:*") as archive:
            for info in archive:  # headers one by one: a stream, never the whole listing
                count += 1
                if count > limits.zip.max_entries:
                    raise too_large("tar", f"holds more than {limits.zip.max_entries:,} entries")
                if not info.isreg():
                    continue  # folders, links, devices: no content of their own
                path = _clean(info.name)
                total += info.size  # a member skipped is still inflated: it counts too
                if total > limits.zip.max_unpacked_bytes or (
                    total > floor and total > ratio * len(content)
                ):
                    cap = min(limits.zip.max_unpacked_bytes, ratio * len(content))
                    raise too_large(
                        "tar", f"unpacks to more than {cap:,} bytes (at member {path!r}; a bomb?)"
                    )
                if info.size > limits.max_member_bytes:
                    yield _over_member_cap(path, info.size, name, limits)
                    continue
                handle = archive.extractfile(info)
                data = handle.read() if handle is not None else b""
                yield Member(path, data, _version(data))
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise ItemError("parse_error", f"{name!r} is not a readable tar archive: {exc}") from exc


def _mbox(content: bytes, name: str, limits: ContainerLimits) -> Iterator[Member | MemberFailure]:
    """Each message of an mbox file, read with the stdlib ``mailbox`` (which wants a
    path: the bytes are spooled to a temporary file). Its path is its ``Message-ID``
    without the angle brackets, else a hash of its bytes; a repeated id gets ``#2``…"""
    if content and not content.startswith(b"From "):
        raise ItemError(
            "parse_error", f"{name!r} is not an mbox file: it does not start with 'From '"
        )
    fd, spool = tempfile.mkstemp(suffix=".mbox")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        box = mailbox.mbox(spool, create=False)
        seen: dict[str, int] = {}
        count = 0
        try:
            for key in box.iterkeys():
                count += 1
                if count > limits.zip.max_entries:
                    raise too_large("mbox", f"holds more than {limits.zip.max_entries:,} messages")
                data = box.get_bytes(key)  # not get_message: it decodes the From line
                raw_id = _HEADERS.parsebytes(data).get("Message-ID") or ""
                path = _message_path(raw_id, data)
                seen[path] = seen.get(path, 0) + 1
                if seen[path] > 1:
                    path = f"{path}#{seen[path]}"
                if len(data) > limits.max_member_bytes:
                    yield _over_member_cap(path, len(data), name, limits)
                    continue
                yield Member(path, data, _version(data), "message/rfc822")
        finally:
            box.close()
    finally:
        os.unlink(spool)


def _message_path(raw_id: str, data: bytes) -> str:
    """A message's stable name: its ``Message-ID`` (angle brackets and spaces dropped)."""
    parsed = email.utils.unquote(" ".join(str(raw_id).split()).strip("<> "))
    cleaned = "".join(ch for ch in parsed if ch.isprintable() and not ch.isspace())
    return cleaned[:300] if cleaned else "sha256:" + hashlib.sha256(data).hexdigest()[:32]
