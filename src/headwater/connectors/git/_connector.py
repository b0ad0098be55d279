"""The git connector: files of one branch, read incrementally by diffing commits.

The final checkpoint is the commit a run synced. The next run fetches the branch into a
private mirror and diffs that commit against the new head: changed files come as
documents (version = blob sha, content fetched lazily by sha), removed ones as explicit
``Deleted`` items; a rename is a delete plus a create, since paths are the ids. Without
a checkpoint, or when the old commit is gone or no longer an ancestor (a force-push),
the run lists the whole tree at head instead. ``enumerate()`` is that tree.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import ClassVar

from pydantic import Field

from headwater.clock import as_utc, iso
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.git._repo import Entry, Mirror, resolve_url
from headwater.connectors.globs import KeyFilter
from headwater.errors import HeadwaterError, ItemError
from headwater.scopes import HIERARCHY_KEY
from headwater.types import (
    Checkpoint,
    Deleted,
    Failure,
    KnownVersions,
    MetadataValue,
    SourceDocument,
    SourceItem,
    Stage,
    Window,
)

log = logging.getLogger(__name__)

_REGULAR_FILES = {"100644", "100755"}


class GitOptions(ConnectorOptions):
    """The keys of a ``git`` source."""

    url: str = Field(min_length=1)
    branch: str | None = None
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    max_file_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    link_template: str | None = None
    page_size: int = Field(default=200, ge=1, le=5000)


@dataclass(frozen=True)
class _Plan:
    """What one read covers: a diff ``base..head`` or, with no base, the tree at head."""

    base: str | None
    head: str
    after: str | None = None


class GitConnector:
    """Reads the files of one branch of a git repository."""

    type_name: ClassVar[str] = "git"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[GitOptions]] = GitOptions

    def __init__(self, options: GitOptions, context: SourceContext) -> None:
        self.options = options
        self.context = context
        self._selected = KeyFilter(options.include, options.exclude)
        # What decides which files a read yields: a checkpoint made under other values
        # cannot stand for this config (a widened include, a raised size limit).
        selection = [options.include, options.exclude, options.max_file_bytes]
        self._scope = hashlib.sha256(json.dumps(selection).encode()).hexdigest()[:16]
        path = context.state_dir / "git" / context.source_id
        self._mirror = Mirror(path, resolve_url(options.url, context.config_root), options.branch)

    def validate(self) -> None:
        """Check that the remote repository and branch can be reached."""
        self._mirror.probe()

    def in_scope(self, object_id: str) -> bool:
        """Whether the include/exclude globs (on the repository path) select this file."""
        return self._selected(object_id)

    def enumerate(self) -> Iterator[str]:
        """Every selected file at the branch head; raises if the listing cannot finish."""
        head = self._mirror.update()
        for entry in self._mirror.tree(head):
            if entry.mode in _REGULAR_FILES and self._selected(entry.path):
                yield entry.path

    def fetch(self, ref: str) -> bytes:
        """A blob's bytes by sha."""
        try:
            data = self._mirror.blob(ref)
        except HeadwaterError as exc:
            raise ItemError("not_found", f"git blob {ref} is not in the mirror: {exc}") from exc
        if len(data) > self.options.max_file_bytes:
            raise ItemError("too_large", f"git blob {ref} is over max_file_bytes")
        return data

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the branch's files changed since the commit last synced (all on a first run)."""
        head = self._mirror.update()
        plan = self._plan(checkpoint, head)
        final = Checkpoint(json.dumps({"v": 1, "commit": plan.head, "scope": self._scope}))
        if plan.base == plan.head:
            return final
        for batch in _batches(self._entries(plan), self.options.page_size):
            yield from self._items(batch, plan.head, known)
            cursor = {
                "v": 1,
                "base": plan.base,
                "head": plan.head,
                "after": batch[-1].path,
                "scope": self._scope,
            }
            yield Checkpoint(json.dumps(cursor))
        return final

    def _entries(self, plan: _Plan) -> Iterator[Entry]:
        """The plan's tree or diff, after the resumed path (from the start if it is absent)."""

        def stream() -> Iterator[Entry]:
            if plan.base is None:
                return self._mirror.tree(plan.head)
            return self._mirror.diff(plan.base, plan.head)

        entries = stream()
        if plan.after is not None:
            for entry in entries:
                if entry.path == plan.after:
                    break
            else:
                log.warning("git: resumed path %r not found; redoing the batch", plan.after)
                entries = stream()
        yield from entries

    def _plan(self, checkpoint: Checkpoint | None, head: str) -> _Plan:
        """Resume a run, diff from the last synced commit, or list the whole tree."""
        cursor = _cursor(checkpoint)
        mirror = self._mirror
        if cursor and cursor.get("scope") != self._scope:
            # A diff yields only changed files: one newly included (or now under the size
            # limit) would never come. Unchanged files are skipped by the version gate. A
            # checkpoint without a scope (an older Headwater's) is listed once too.
            log.warning(
                "git %s: `include`, `exclude` or `max_file_bytes` changed since the last "
                "run; listing the whole tree at %s",
                mirror.shown,
                head,
            )
            return _Plan(None, head)
        if "after" in cursor:
            base, pinned = cursor.get("base"), cursor.get("head")
            usable = isinstance(pinned, str) and mirror.has_commit(pinned)
            if usable and (base is None or (isinstance(base, str) and mirror.has_commit(base))):
                return _Plan(base, str(pinned), str(cursor["after"]))
            log.warning(
                "git %s: the resumed run's commits are gone; listing the tree", mirror.shown
            )
            return _Plan(None, head)
        synced = cursor.get("commit")
        if not isinstance(synced, str):
            return _Plan(None, head)
        if not mirror.has_commit(synced):
            log.warning(
                "git %s: last synced commit %s is gone; listing the whole tree at %s",
                mirror.shown,
                synced,
                head,
            )
            return _Plan(None, head)
        if not mirror.is_ancestor(synced, head):
            log.warning(
                "git %s: branch was force-pushed (%s is not an ancestor of %s); listing the "
                "whole tree; deletes are found by the next prune",
                mirror.shown,
                synced,
                head,
            )
            return _Plan(None, head)
        return _Plan(synced, head)

    def _items(self, batch: list[Entry], head: str, known: KnownVersions) -> Iterator[SourceItem]:
        selected = [e for e in batch if self._selected(e.path)]
        changed = [e for e in selected if e.sha is not None and e.mode in _REGULAR_FILES]
        sizes = self._mirror.sizes([e.sha for e in changed if e.sha and not e.size])
        commits = self._mirror.last_commits(head, [e.path for e in changed])
        for entry in selected:
            if entry.sha is None:
                yield Deleted(entry.path)
                continue
            if entry.mode not in _REGULAR_FILES:  # a symlink or submodule: not a document
                if known(entry.path) is not None:
                    yield Deleted(entry.path)  # it was a file before
                continue
            size = entry.size or sizes.get(entry.sha, 0)
            locator = self._locator(head, entry.path)
            if size > self.options.max_file_bytes:
                yield Failure(
                    entry.path, locator, Stage.FETCH.value, "too_large",
                    f"{size} bytes is over max_file_bytes={self.options.max_file_bytes}; "
                    "raise `max_file_bytes` or exclude the path",
                    permanent=True,
                )  # fmt: skip
                continue
            metadata: dict[str, MetadataValue] = {
                "blob": entry.sha,
                "size": str(size),
                HIERARCHY_KEY: entry.path,
            }
            info = commits.get(entry.path)
            if info is not None:
                metadata |= {
                    "commit": info.sha,
                    "author": info.author,
                    "committed_at": iso(info.committed_at) or "",
                }
            yield SourceDocument(
                object_id=entry.path,
                locator=locator,
                title="",  # the parser finds the title; else the core uses the path
                version=entry.sha,
                fetch_ref=entry.sha,
                updated_at=as_utc(info.committed_at) if info else None,
                metadata=metadata,
            )

    def _locator(self, head: str, path: str) -> str:
        template = self.options.link_template
        branch = self._mirror.branch()
        if template:
            return (
                template.replace("{branch}", branch)
                .replace("{commit}", head)
                .replace("{path}", path)
            )
        return f"{self._mirror.shown}#{branch}:{path}"


def _cursor(checkpoint: Checkpoint | None) -> dict[str, object]:
    if checkpoint is None:
        return {}
    try:
        cursor = json.loads(checkpoint.cursor)
    except ValueError:
        log.warning("git: ignoring an unreadable checkpoint; listing the whole tree")
        return {}
    return cursor if isinstance(cursor, dict) else {}


def _batches(entries: Iterator[Entry], size: int) -> Iterator[list[Entry]]:
    while batch := list(islice(entries, size)):
        yield batch
