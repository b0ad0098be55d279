"""The filesystem connector: a directory tree, listed in full on every run.

Object ids are POSIX paths relative to the root; the version hint is ``mtime_ns:size``,
so an unchanged tree is re-synced without opening a file (content is fetched lazily).
The walk visits each directory's entries in name order, which makes the whole listing
ordered by path parts: a checkpoint is simply the last path yielded (one a batch). The
workspace's ``state_dir``, when it lies under the root, is never listed.

Symlinks are skipped unless ``follow_symlinks``, and even then a link is followed only to
a target inside this source's own scope: under the root *and* selected by its include and
exclude (two sources over one root, ``public/**`` and ``hr/**``, must not publish each
other's files); any other link is a permanent ``link_out_of_scope`` failure. A read
re-checks what the listing saw (``_read``): the ``fetch_ref`` carries the file's device
and inode, and no link and no file put in its place since is read.

With ``containers`` (the default) an mbox, zip or tar file is read while listed and its
members become documents (``docs.zip!/a.md``, ``connectors._archives``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from json.encoder import encode_basestring_ascii
from operator import attrgetter
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from headwater.connectors._archives import (
    container_id,
    container_items,
    container_kind,
    member_ids,
    whole_failure,
)
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.filesystem._items import _checkpoint, _cursor_head, listed_item
from headwater.connectors.filesystem._read import read_listed
from headwater.connectors.filesystem._refetch import refetch
from headwater.connectors.globs import KeyFilter, compile_glob
from headwater.connectors.names import is_utf8, printable
from headwater.errors import ConfigError, FatalError, ItemError
from headwater.pipeline.parse import ContainerLimits
from headwater.types import (
    Checkpoint,
    Deleted,
    Failure,
    KnownVersions,
    SourceDocument,
    Stage,
    Window,
)

DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024

Listed = tuple[tuple[str, ...], str, os.stat_result]  # a file's path parts, path and stat
_NAME = attrgetter("name")


class FilesystemOptions(ConnectorOptions):
    """The filesystem connector's options: the root and the include/exclude globs."""

    root: str
    include: list[str] = Field(default_factory=lambda: ["**/*"])
    exclude: list[str] = Field(default_factory=list)
    follow_symlinks: bool = False
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1)
    containers: bool = True  # mbox, zip and tar files: each member a document


def matches_any(path: str, patterns: list[str]) -> bool:
    """Whether ``path`` matches any of the globs (see ``headwater.connectors.globs``)."""
    return any(compile_glob(p).fullmatch(path) is not None for p in patterns)


class FilesystemConnector:
    """A directory tree as a source, listed in full on every run."""

    type_name: ClassVar[str] = "filesystem"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=True
    )
    Options: ClassVar[type[FilesystemOptions]] = FilesystemOptions

    def __init__(self, options: FilesystemOptions, context: SourceContext | None = None) -> None:
        self.options = options
        root = Path(options.root).expanduser()
        if not root.is_absolute() and context is not None and context.config_root is not None:
            root = context.config_root / root
        self.root = root.resolve()
        self._prefix = str(self.root).rstrip("/") + "/"
        self.files_read = 0
        # a checkpoint a file was 5 % of a no-op's work; one a batch (and after a
        # container's members) is as often as the runner commits
        self._checkpoint_every = context.checkpoint_every if context is not None else 1
        self._selects = KeyFilter(options.include, options.exclude)
        # the default include and no exclude: every listed file is in scope, unasked
        self._selects_every_file = self._selects._everything
        # The workspace's own state (manifest, indexes, content store) when it lies under
        # the root, e.g. `root = "."` beside headwater.toml: never read as documents.
        self._state_dir: tuple[int, int] | None = None
        if context is not None:
            try:
                st = context.state_dir.stat()
                self._state_dir = (st.st_dev, st.st_ino)
            except OSError:
                pass
            self.state_path: Path | None = context.state_dir.resolve()
        else:
            self.state_path = None

    def validate(self) -> None:
        """Check that the root exists and is a folder."""
        file = next((p for p in (self.root, *self.root.parents) if p.is_file()), None)
        if file is not None:  # the root, or a folder on its way, is a file
            what = "is a file" if file == self.root else f"lies under {str(file)!r}, a file"
            raise ConfigError(
                f"filesystem root {str(self.root)!r} {what}, not a folder; point `root` at "
                f"a folder (this file's is {str(file.parent)!r}) and choose files with "
                "`include`."
            )
        if not self.root.exists():
            raise ConfigError(
                f"filesystem root {str(self.root)!r} does not exist; expected a folder. "
                "Fix `root` or create the folder."
            )
        if not self.root.is_dir():
            raise ConfigError(
                f"filesystem root {str(self.root)!r} is not a folder; point `root` at one."
            )
        if not os.access(self.root, os.R_OK | os.X_OK):
            raise ConfigError(
                f"filesystem root {str(self.root)!r} is not readable (permission denied); "
                "grant read access or run as a user who has it."
            )

    def in_scope(self, object_id: str) -> bool:
        """Whether the config (include/exclude) still selects this path (for a member of
        a container, the container's)."""
        return self._selects(container_id(object_id))

    def _listed_in_scope(self, rel: str) -> bool:
        """``in_scope`` for a file the walk found: each folder above it was already asked
        ``excludes_folder`` on the way down, so only the path itself is matched."""
        if container_id(rel) != rel:
            return self.in_scope(rel)
        return self._selects.matches(rel)

    def _scandir(self, directory: Path) -> list[os.DirEntry[str]]:
        """The entries of one directory in name order (raises OSError if unlistable)."""
        with os.scandir(directory) as entries:
            return sorted(entries, key=_NAME)

    def _unlistable(self, parts: tuple[str, ...], exc: OSError, what: str = "folder") -> Failure:
        """A folder (or an entry that might be one: a ``link`` that cannot be followed, an
        ``entry`` that vanished while listed) that could not be listed or stat'ed.

        A prefix failure: every known document under the folder counts as present, so an
        unreadable folder never deletes its files.
        """
        rel = "/".join(parts)
        shown = printable(rel)  # the id stays the real path, so it covers what is under it
        reason = printable(exc.strerror or type(exc).__name__)
        problem, fix = {
            "folder": ("folder '{}' could not be listed", "Fix its permissions or link"),
            "link": ("link '{}' could not be followed", "Fix or remove the link"),
            "entry": ("'{}' could not be read while listed", "Sync again"),
        }[what]
        return Failure(
            object_id=rel if is_utf8(rel) else shown,
            locator=printable(str(self.root.joinpath(*parts))),
            stage=Stage.ENUMERATE.value,
            error_class="unlistable",
            message=(
                f"{problem.format(shown)} ({reason}); nothing under it was read or deleted. "
                f"{fix}, or exclude it."
            ),
            prefix=True,
        )

    def _walk(
        self,
        directory: Path,
        parts: tuple[str, ...],
        after: tuple[str, ...] | None,
        seen_dirs: frozenset[tuple[int, int]],
        via_link: bool = False,
    ) -> Iterator[Listed | Failure]:
        """Files (path parts, path and stat, the target's for a followed link) under
        ``directory``; ``via_link``: a followed link led here (check each real path)."""
        try:
            entries = self._scandir(directory)
        except OSError as exc:
            if not parts:
                raise FatalError(
                    f"filesystem root {str(self.root)!r} could not be listed "
                    f"({exc.strerror or exc}); fix its permissions or `root`."
                ) from exc
            yield self._unlistable(parts, exc)
            return
        folder = "/".join(parts) + "/" if parts else ""  # each file's path is folder + name
        follow, every = self.options.follow_symlinks, self._selects_every_file
        for entry in entries:
            here = (*parts, entry.name)
            if after is not None and here < after[: len(here)]:
                continue  # this entry and everything under it came before the checkpoint
            if (is_link := entry.is_symlink()) and not follow:
                continue
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError as exc:
                if self._selects.excludes_folder("/".join(here)):
                    continue  # nothing under it is wanted: no failure to keep it
                if after is None or here > after:  # may be a folder: keep what it held
                    what = "link" if is_link else "entry"
                    if not is_link and entry.is_dir(follow_symlinks=False):
                        what = "folder"
                    yield self._unlistable(here, exc, what)
                continue
            linked = via_link or is_link
            if entry.is_dir(follow_symlinks=follow):
                if self._selects.excludes_folder("/".join(here)):
                    continue  # excluded whole: never listed, so never an unlistable failure
                if linked and (refused := self._out_of_scope(here, entry.path, folder=True)):
                    if after is None or here > after:
                        yield refused
                    continue
                key = (st.st_dev, st.st_ino)
                if key in seen_dirs or key == self._state_dir:
                    continue  # a symlink cycle, or Headwater's own state_dir
                yield from self._walk(Path(entry.path), here, after, seen_dirs | {key}, linked)
            elif entry.is_file(follow_symlinks=follow):
                if after is not None and here <= after:
                    continue
                rel = folder + entry.name
                if not (every or self._listed_in_scope(rel)):
                    continue
                if linked and (refused := self._out_of_scope(here, entry.path)):
                    yield refused
                    continue
                yield here, rel, st

    def _real_parts(self, path: str) -> tuple[str, ...] | None:
        """The parts of ``path``'s real location relative to the root, links resolved;
        None when it lies outside the root."""
        real = Path(os.path.realpath(path))
        if real != self.root and self.root not in real.parents:
            return None
        return real.relative_to(self.root).parts

    def _out_of_scope(
        self, parts: tuple[str, ...], path: str, *, folder: bool = False
    ) -> Failure | None:
        """A failure when a followed link (``parts`` or a folder above it) leads outside
        this source's scope: the root, and for a file this source's include/exclude."""
        real = self._real_parts(path)
        if real is None:
            where = "outside the root"
        elif folder and (not real or not self._selects.excludes_folder("/".join(real))):
            return None  # each file under it is checked on its own
        elif not folder and self.in_scope("/".join(real)):
            return None
        else:
            where = f"to '{printable('/'.join(real))}', which this source does not select"
        rel = "/".join(parts)
        return Failure(
            object_id=rel if is_utf8(rel) else printable(rel),
            locator=printable(str(self.root.joinpath(*parts))),
            stage=Stage.ENUMERATE.value,
            error_class="link_out_of_scope",
            message=(
                f"'{printable(rel)}' is a link (or lies under one) that leads {where}; it was "
                "not read: a link is followed only within the source's own root, include and "
                "exclude. Point the link inside the source, or exclude it."
            ),
            permanent=True,
        )

    def _listing(self, after: tuple[str, ...] | None = None) -> Iterator[Listed | Failure]:
        self.validate()
        st = self.root.stat()
        return self._walk(self.root, (), after, frozenset({(st.st_dev, st.st_ino)}))

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield every selected file (content fetched lazily), resuming after the checkpoint."""
        after = tuple(json.loads(checkpoint.cursor)["after"]) if checkpoint else None
        folder: tuple[str, ...] = ()  # the cursor's folder part, once a folder
        containers, head = self.options.containers, _cursor_head(folder)
        since, every = 0, self._checkpoint_every  # files yielded since the last checkpoint
        prefix, largest = self._prefix, self.options.max_file_bytes
        for found in self._listing(after):
            if isinstance(found, Failure):
                yield found
                continue
            parts, rel, st = found
            item = listed_item(prefix, rel, st, largest)
            since += 1
            if containers and type(item) is SourceDocument and container_kind(rel) is not None:
                yield from self._members(item)
                since = every  # its members may be many: a checkpoint after them
            else:
                yield item
            if since < every:
                continue
            since = 0
            if parts[:-1] != folder:
                folder = parts[:-1]
                head = _cursor_head(folder)
            yield _checkpoint(head + encode_basestring_ascii(parts[-1]) + "]}")
        return None

    def _item(self, rel: str, st: os.stat_result) -> SourceDocument | Failure:
        return listed_item(self._prefix, rel, st, self.options.max_file_bytes)

    def _is_container(self, object_id: str) -> bool:
        return self.options.containers and container_kind(object_id) is not None

    def _members(self, item: SourceDocument) -> Iterator[SourceDocument | Failure]:
        """The members of the container file ``item`` (read now), or its failure."""
        assert item.fetch_ref is not None
        try:
            content = self.fetch(item.fetch_ref)
        except ItemError as exc:
            yield whole_failure(item.object_id, item.locator, exc, item)
            return
        yield from container_items(
            content,
            object_id=item.object_id,
            locator=item.locator,
            updated_at=item.updated_at,
            metadata=item.metadata,
            limits=self._limits(),
            container=item,
        )

    def _limits(self) -> ContainerLimits:
        """A member, like a file, is read up to ``max_file_bytes``."""
        cap = min(ContainerLimits.max_member_bytes, self.options.max_file_bytes)
        return ContainerLimits(max_member_bytes=cap)

    def enumerate(self) -> Iterator[str]:
        """Every selected path; raises FatalError when a folder cannot be listed (a
        partial enumeration must delete nothing). A link refused as out of scope counts
        as present, as its failure does in a read."""
        for found in self._listing():
            if isinstance(found, Failure):
                if found.prefix:
                    raise FatalError(found.message)
                yield found.object_id
                continue
            rel = printable(found[1])
            if not self._is_container(rel) or found[2].st_size > self.options.max_file_bytes:
                yield rel
                continue
            try:  # a container that cannot be listed now must delete none of its members
                yield from member_ids(self.fetch(rel), rel, self._limits())
            except ItemError as exc:
                raise FatalError(f"{rel!r} could not be listed to prune: {exc}") from exc

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted | Failure]:
        """Each selected path as a listing would see it now (see ``_refetch``)."""
        return refetch(self, object_ids)

    def fetch(self, ref: str) -> bytes:
        """The bytes of the regular file the listing saw at ``ref`` (``_read``)."""
        return read_listed(self, ref)
