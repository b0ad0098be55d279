"""A workspace's indexes: each index's generations, their sinks and their indexers.

``WorkspaceIndexes`` is the part of ``Workspace`` that turns the configured indexes into
live objects: the config's index version, the live generation a search reads, one sink
per generation (bound to this manifest on first use), and the indexer over every
generation that receives writes. Sinks are opened lazily and cached per generation.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from headwater.config import IndexSection
from headwater.errors import ConfigError, NotFoundError
from headwater.indexer.indexer import IndexTarget
from headwater.indexer.report import IndexReport
from headwater.manifest.generations import Generation
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.version import index_version
from headwater.rebuilds.pipelines import GenerationIndexer, Pipelines
from headwater.sinks import Sink, load_sink_class
from headwater.sinks.base import Binding

if TYPE_CHECKING:
    from headwater.config import HeadwaterConfig
    from headwater.manifest.store import Manifest

log = logging.getLogger(__name__)

DEFAULT_INDEX = IndexSection(name="main", type="sqlite")


class WorkspaceIndexes:
    """The configured indexes of a workspace as generations, sinks and indexers."""

    if TYPE_CHECKING:  # set by ``Workspace.__init__``
        config: HeadwaterConfig
        manifest: Manifest
        pipelines: Pipelines
        chunking_version: str
        _sink_types: dict[str, Any]
        _sinks: dict[str, Sink]

        def _drain(
            self, indexer: GenerationIndexer, only: Sequence[str] | None = None
        ) -> IndexReport: ...

    @property
    def index_sections(self) -> list[IndexSection]:
        return list(self.config.index) or [DEFAULT_INDEX]

    def sink_class(self, type_name: str) -> Any:
        return self._sink_types.get(type_name) or load_sink_class(type_name)

    def index_section(self, name: str) -> IndexSection:
        section = next((s for s in self.index_sections if s.name == name), None)
        if section is None:
            known = ", ".join(s.name for s in self.index_sections)
            raise ConfigError(f"index {name!r} is not configured; expected one of: {known}.")
        return section

    def index_version(self, section: IndexSection) -> str:
        """The config's version of the index: chunker, embedder, sink type and schema."""
        cls = self.sink_class(section.type)
        return index_version(self.chunking_version, section.type, cls.schema_version)

    def live_generation(self, name: str) -> Generation:
        self.index_section(name)
        live = self.manifest.generations.live(name)
        if live is None:
            raise NotFoundError(
                f"index {name!r} has no live generation; switch one in with "
                f"`headwater rebuild switch {name}` (see `headwater rebuild status`)."
            )
        return live

    def sink(self, name: str) -> Sink:
        """The sink of the index's live generation (the one searches read)."""
        return self.generation_sink(self.live_generation(name))

    def query_embedder(self, name: str) -> Embedder:
        """The embedder of the index's live generation (queries meet its vectors)."""
        return self.pipelines.pipeline(self.live_generation(name)).embedder()

    def generation_sink(self, generation: Generation) -> Sink:
        key = generation.key
        if key not in self._sinks:
            sink = self.pipelines.sink(generation)
            binding = sink.bind(self.manifest.manifest_id)
            if binding is Binding.RESET:
                log.warning(
                    "index %r belonged to another manifest; it was emptied and is rebuilt "
                    "from this one",
                    generation.label,
                )
                self.manifest.index_state.forget_index(key)
            elif binding is Binding.NEW and (held := self.manifest.index_state.totals(key)[0]):
                log.warning(
                    "index %r was created just now, but the manifest records %d documents "
                    "in it: its storage was deleted or moved (a new path, url or collection); "
                    "run `headwater reconcile --repair` to write them again from stored "
                    "content (no source is read)",
                    generation.label,
                    held,
                )
            self._sinks[key] = sink
        return self._sinks[key]

    def drop_generation_sink(self, generation: Generation) -> None:
        """Delete a generation's storage (disk freed) and forget its applied rows."""
        sink = self._sinks.pop(generation.key, None) or self.pipelines.sink(generation)
        sink.drop()
        self.manifest.index_state.forget_index(generation.key)

    def generation_target(self, generation: Generation) -> IndexTarget:
        return IndexTarget(
            generation.key, self.generation_sink(generation), self.pipelines.version(generation)
        )

    def generation_indexer(self, generations: Sequence[Generation]) -> GenerationIndexer:
        """One indexer per distinct pipeline over ``generations``."""
        return self.pipelines.indexer(generations)

    def indexer(self) -> GenerationIndexer:
        """Every generation that receives writes: each index's live one and any in progress."""
        return self.generation_indexer(
            [g for s in self.index_sections for g in self.manifest.generations.writable(s.name)]
        )

    def drain_writable(self, problems: list[str]) -> IndexReport:
        """One pass over every generation that receives writes *now*, read again each call:
        a generation a rebuild created (or switched in) while a sync runs gets that sync's
        writes too, deletes and ACL changes included. New problems are added to
        ``problems``."""
        current = self.indexer()
        report = self._drain(current)
        problems.extend(p for p in current.problems if p not in problems)
        return report
