"""A workspace's indexes: each index's generations, their sinks and their indexers.

``WorkspaceIndexes`` is the part of ``Workspace`` that turns the configured indexes into
live objects: the config's index version, the live generation a search reads, one sink
per generation (bound to this manifest on first use), and the indexer over every
generation that receives writes. Sinks are opened lazily and cached per generation. An
index bound to another manifest is never emptied or rebound on its own: opening it
raises ``IndexOwnedElsewhere`` until the operator adopts or resets it
(``take_over_indexes``, behind ``headwater reconcile --adopt|--reset``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from headwater.config import IndexSection
from headwater.errors import ConfigError, IndexOwnedElsewhere, NotFoundError
from headwater.indexer.indexer import IndexTarget
from headwater.indexer.report import IndexReport
from headwater.manifest.generations import Generation
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.version import index_version
from headwater.rebuilds.pipelines import GenerationIndexer, Pipelines
from headwater.sinks import Sink, SinkClass, load_sink_class

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

    def sink_class(self, type_name: str) -> SinkClass:
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
        """The generation's sink, bound to this manifest. One bound to another manifest is
        refused (``IndexOwnedElsewhere``) and left as it is, for reads and writes alike."""
        key = generation.key
        if key not in self._sinks:
            sink = self.pipelines.sink(generation)
            bound, mine = sink.bound_manifest(), self.manifest.manifest_id
            if bound is None:
                sink.bind(mine)
                if held := self.manifest.index_state.totals(key)[0]:
                    log.warning(
                        "index %r was created just now, but the manifest records %d documents "
                        "in it: its storage was deleted or moved (a new path, url or "
                        "collection); run `headwater reconcile --repair` to write them again "
                        "from stored content (no source is read)",
                        generation.label,
                        held,
                    )
            elif bound != mine:
                sink.close()
                raise self._owned_elsewhere(generation, bound)
            self._sinks[key] = sink
        return self._sinks[key]

    def _owned_elsewhere(self, generation: Generation, bound: str) -> IndexOwnedElsewhere:
        url = self.manifest.engine.url.render_as_string(hide_password=True)
        name = generation.index_name
        return IndexOwnedElsewhere(
            f"index {generation.label!r} belongs to manifest {bound}, not to this "
            f"workspace's manifest {self.manifest.manifest_id} ([manifest] url = {url}); "
            "nothing was changed. If the url is wrong, fix [manifest] url. To give the index "
            f"to this manifest, run `headwater reconcile --adopt --sink {name}` (keeps what it "
            "holds, then rewrites only what differs from this manifest) or `headwater "
            f"reconcile --reset --sink {name}` (empties it and indexes everything again from "
            "this manifest's stored content)."
        )

    def take_over_indexes(self, name: str | None = None, *, empty: bool) -> list[str]:
        """Bind every generation of the configured indexes (or ``name``'s) that belongs to
        another manifest to this one; ``empty`` empties each first (its applied rows here
        are forgotten: all of it is pending). The labels taken over, in order."""
        taken: list[str] = []
        mine = self.manifest.manifest_id
        for section in self.index_sections:
            if name not in (None, section.name):
                continue
            for generation in self.manifest.generations.writable(section.name):
                if generation.key in self._sinks:
                    continue  # opened already: bound to this manifest
                sink = self.pipelines.sink(generation)
                bound = sink.bound_manifest()
                if bound is None or bound == mine:
                    sink.close()
                    continue
                sink.bind(mine, empty=empty)
                if empty:
                    self.manifest.index_state.forget_index(generation.key)
                log.warning(
                    "index %r (manifest %s) now belongs to manifest %s%s",
                    generation.label, bound, mine, "; it was emptied" if empty else "",
                )  # fmt: skip
                self._sinks[generation.key] = sink
                taken.append(generation.label)
        return taken

    def drop_generation_sink(self, generation: Generation) -> None:
        """Delete a generation's storage (disk freed) and forget its applied rows; never
        the storage of an index bound to another manifest (``IndexOwnedElsewhere``)."""
        sink = self._sinks.pop(generation.key, None) or self.pipelines.sink(generation)
        bound = sink.bound_manifest()
        if bound not in (None, self.manifest.manifest_id):
            sink.close()
            raise self._owned_elsewhere(generation, str(bound))
        sink.drop()
        self.manifest.index_state.forget_index(generation.key)

    def generation_target(self, generation: Generation) -> IndexTarget:
        return IndexTarget(
            generation.key, self.generation_sink(generation), self.pipelines.version(generation)
        )

    def generation_indexer(
        self, generations: Sequence[Generation], should_stop: Callable[[], bool] | None = None
    ) -> GenerationIndexer:
        """One indexer per distinct pipeline over ``generations``."""
        return self.pipelines.indexer(generations, should_stop)

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
