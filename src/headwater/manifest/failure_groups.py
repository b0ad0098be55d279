"""Open failures grouped by cause: source, stage, class and, for unread files, extension.

A share can hold 100k failure records, and an operator wants "``unsupported_type .rst``:
51", not 51 lines. One streaming pass over the open rows (only the few columns a group
needs, fetched in batches) keeps a counter and at most ``EXAMPLES`` example ids per
group, so memory grows with the number of groups, never with the number of failures.
The extension is part of the key only where it names the cause: ``unsupported_type`` at
any stage and every ``parse`` failure (a ``.rst`` file nobody reads, a damaged ``.pdf``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sqlalchemy import Connection, select

from headwater.manifest import schema as t

EXAMPLES = 3
BATCH = 2000
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz")
_SUFFIX = re.compile(r"\.[A-Za-z0-9_+-][A-Za-z0-9_+-]{0,15}")


def extension_of(object_id: str) -> str:
    """The extension a parser sees in an object id, lower case with its dot, or ``""``.

    The last path segment counts (``archive.zip!/docs/a.RST`` → ``.rst``; a URL's query
    and fragment are left out); a compressed file keeps the inner extension too
    (``NEWS.rst.gz`` → ``.rst.gz``), hidden files (``.gitignore``) and names without a
    dot have none, and a "suffix" that is no extension (``notes.2024 draft``) is none.
    """
    name = object_id
    if "://" in name:
        name = name.split("#", 1)[0].split("?", 1)[0]
    path = PurePosixPath(name.rstrip("/").rsplit("/", 1)[-1])
    suffix = path.suffix
    if not _SUFFIX.fullmatch(suffix):
        return ""
    if suffix.lower() in COMPRESSION_SUFFIXES:
        inner = PurePosixPath(path.stem).suffix
        if _SUFFIX.fullmatch(inner):
            suffix = inner + suffix
    return suffix.lower()


def keeps_extension(stage: str, error_class: str) -> bool:
    """Whether failures of this stage and class are grouped by extension too."""
    return error_class == "unsupported_type" or stage == "parse"


@dataclass(frozen=True)
class GroupKey:
    """What a group's failures share; ``extension`` is None where it is not part of it."""

    source_id: str
    stage: str
    error_class: str
    extension: str | None = None

    def label(self) -> str:
        """``unsupported_type .rst``, ``too_large``, or ``unsupported_type (no extension)``."""
        if self.extension is None:
            return self.error_class
        return f"{self.error_class} {self.extension or '(no extension)'}"


@dataclass(frozen=True)
class FailureGroup:
    """Open failures of one cause: how many, how many dead-lettered, a few examples.

    ``spellings`` are the extension as the object ids write it (``.GIF`` and ``.gif``
    group together; an exclude glob must name each); ``message`` is the first example's.
    """

    key: GroupKey
    count: int
    dead: int
    examples: tuple[str, ...]
    spellings: tuple[str, ...] = ()
    message: str = ""


@dataclass
class _Tally:
    count: int = 0
    dead: int = 0
    examples: list[str] = field(default_factory=list)
    first_entry: int = 0
    spellings: list[str] = field(default_factory=list)


def _raw_suffix(object_id: str, extension: str) -> str:
    """``extension`` as ``object_id`` spells it (the tail of the same length)."""
    name = object_id.split("#", 1)[0].split("?", 1)[0] if "://" in object_id else object_id
    tail = name.rstrip("/")[-len(extension) :] if extension else ""
    return tail if tail.lower() == extension else extension


def _open_rows(
    conn: Connection, source_id: str | None, statuses: Sequence[str]
) -> Iterator[tuple[int, str, str, str, str, str]]:
    query = select(
        t.failures.c.entry_id,
        t.failures.c.source_id,
        t.failures.c.stage,
        t.failures.c.error_class,
        t.failures.c.status,
        t.failures.c.object_id,
    ).where(t.failures.c.status.in_(list(statuses)))
    if source_id:
        query = query.where(t.failures.c.source_id == source_id)
    result = conn.execute(query.order_by(t.failures.c.entry_id).execution_options(yield_per=BATCH))
    for part in result.partitions():
        for r in part:
            yield int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5])


def key_of(source_id: str, stage: str, error_class: str, object_id: str) -> GroupKey:
    """The group a failure belongs to: source, stage, error class, and extension when it matters."""
    extension = extension_of(object_id) if keeps_extension(stage, error_class) else None
    return GroupKey(source_id, stage, error_class, extension)


def summarize(
    conn: Connection,
    *,
    source_id: str | None = None,
    statuses: Sequence[str],
    dead_status: str,
) -> list[FailureGroup]:
    """The groups of the failures with one of ``statuses``, largest first."""
    tallies: dict[GroupKey, _Tally] = {}
    for entry_id, source, stage, error_class, status, object_id in _open_rows(
        conn, source_id, statuses
    ):
        key = key_of(source, stage, error_class, object_id)
        tally = tallies.get(key)
        if tally is None:
            tally = tallies[key] = _Tally(first_entry=entry_id)
        tally.count += 1
        tally.dead += status == dead_status
        if len(tally.examples) < EXAMPLES:
            tally.examples.append(object_id)
        if key.extension and len(tally.spellings) < 4:
            spelled = _raw_suffix(object_id, key.extension)
            if spelled not in tally.spellings:
                tally.spellings.append(spelled)
    messages = _messages(conn, [tally.first_entry for tally in tallies.values()])
    groups = [
        FailureGroup(
            key=key,
            count=tally.count,
            dead=tally.dead,
            examples=tuple(tally.examples),
            spellings=tuple(tally.spellings),
            message=messages.get(tally.first_entry, ""),
        )
        for key, tally in tallies.items()
    ]
    groups.sort(
        key=lambda g: (-g.count, g.key.source_id, g.key.stage, g.key.error_class, g.key.label())
    )
    return groups


def _messages(conn: Connection, entry_ids: Sequence[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for start in range(0, len(entry_ids), 500):
        part = list(entry_ids[start : start + 500])
        rows = conn.execute(
            select(t.failures.c.entry_id, t.failures.c.message).where(
                t.failures.c.entry_id.in_(part)
            )
        )
        found.update((int(r[0]), str(r[1])) for r in rows)
    return found


def entries_of(conn: Connection, key: GroupKey, statuses: Sequence[str]) -> list[int]:
    """The entry ids of one group's failures with one of ``statuses`` (a bulk action)."""
    query = (
        select(t.failures.c.entry_id, t.failures.c.object_id)
        .where(
            t.failures.c.status.in_(list(statuses)),
            t.failures.c.source_id == key.source_id,
            t.failures.c.stage == key.stage,
            t.failures.c.error_class == key.error_class,
        )
        .order_by(t.failures.c.entry_id)
        .execution_options(yield_per=BATCH)
    )
    found: list[int] = []
    result = conn.execute(query)
    for part in result.partitions():
        for entry_id, object_id in part:
            if key_of(key.source_id, key.stage, key.error_class, object_id) == key:
                found.append(int(entry_id))
    return found
