"""The configured indexes as live objects: generations, their sinks and their indexers.

``Indexes`` turns the configured indexes into what reads and writes use: the config's
index version and generation settings, the live generation a search reads, one sink per
generation (bound to this manifest on first use), and the indexer over every generation
that receives writes. Sinks are opened lazily and cached per generation. An index bound
to another manifest is never emptied or rebound on its own: opening it raises
``IndexOwnedElsewhere`` until the operator adopts or resets it (``take_over_indexes``,
behind ``headwater reconcile --adopt|--reset``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from headwater.clock import utcnow
from headwater.config import HeadwaterConfig, IndexSection
from headwater.errors import ConfigError, IndexOwnedElsewhere, NotFoundError
from headwater.indexer.generations import (
    GenerationIndexer,
    Pipelines,
    secret_fields,
    settings_changes,
    without_secrets,
)
from headwater.indexer.indexer import IndexTarget
from headwater.indexer.report import IndexReport, LeftToRebuild
from headwater.manifest.content import ContentStore
from headwater.manifest.generations import BUILDING, Generation
from headwater.manifest.store import Manifest
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.version import index_version
from headwater.runtime.controls import Controls
from headwater.sinks import Sink, SinkClass

log = logging.getLogger(__name__)

DEFAULT_INDEX = IndexSection(name="main", type="sqlite")


class Indexes:
    """The configured indexes of a workspace as generations, sinks and indexers."""

    def __init__(
        self,
        config: HeadwaterConfig,
        manifest: Manifest,
        content_store: ContentStore,
        pipelines: Pipelines,
        controls: Controls,
        *,
        chunking_version: str,
        sink_class: Callable[[str], SinkClass],
        embedder_record: Mapping[str, Any],
        loaded_embedders: Callable[[], list[Embedder]],
    ) -> None:
        self.config = config
        self.manifest = manifest
        self.content_store = content_store
        self.pipelines = pipelines
        self.controls = controls
        self.chunking_version = chunking_version
        self.sink_class = sink_class
        self._embedder_record = dict(embedder_record)
        self._loaded_embedders = loaded_embedders
        self._sinks: dict[str, Sink] = {}

    @property
    def sections(self) -> list[IndexSection]:
        """The configured indexes (one sqlite index ``main`` when none is)."""
        return list(self.config.index) or [DEFAULT_INDEX]

    def section(self, name: str) -> IndexSection:
        """The configured index ``name``; ConfigError naming the known ones if none."""
        section = next((s for s in self.sections if s.name == name), None)
        if section is None:
            known = ", ".join(s.name for s in self.sections)
            raise ConfigError(f"index {name!r} is not configured; expected one of: {known}.")
        return section

    def version(self, section: IndexSection) -> str:
        """The config's version of the index: chunker, embedder, sink type and schema."""
        cls = self.sink_class(section.type)
        return index_version(self.chunking_version, section.type, cls.schema_version)

    def config_settings(self, section: IndexSection) -> dict[str, Any]:
        """What a generation built now from the config records (no secrets)."""
        current = self.pipelines.current
        sink_class = self.sink_class(section.type)
        return {
            "embedder": dict(self._embedder_record),
            "model": dict(current.described),
            "chunker": {
                "max_tokens": current.chunker.max_tokens,
                "max_document_chars": current.chunker.max_document_chars,
            },
            "sink": {
                "type": section.type,
                "schema_version": sink_class.schema_version,
                "options": without_secrets(section.options(), secret_fields(sink_class.Options)),
            },
        }

    def changes(self, generation: Generation, section: IndexSection) -> list[str]:
        """What differs between the generation's settings and the config's."""
        return settings_changes(generation.settings, self.config_settings(section))

    def ensure_live(self) -> None:
        """Give every configured index a live generation (built from the config)."""
        for section in self.sections:
            self.manifest.generations.ensure_live(
                section.name, self.version(section), self.config_settings(section)
            )

    def live_generation(self, name: str) -> Generation:
        """The generation of index ``name`` that searches read."""
        self.section(name)
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
        return self.generation_embedder(self.live_generation(name))

    def generation_embedder(self, generation: Generation) -> Embedder:
        """The embedder of ``generation``'s pipeline (its queries meet its vectors)."""
        return self.pipelines.pipeline(generation).embedder()

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

    def take_over(self, name: str | None = None, *, empty: bool) -> list[str]:
        """Bind every generation of the configured indexes (or ``name``'s) that belongs to
        another manifest to this one; ``empty`` empties each first (its applied rows here
        are forgotten: all of it is pending). The labels taken over, in order."""
        taken: list[str] = []
        mine = self.manifest.manifest_id
        for section in self.sections:
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
        """The generation as an indexer's write target."""
        return IndexTarget(
            generation.key, self.generation_sink(generation), self.pipelines.version(generation)
        )

    def writable(self) -> list[Generation]:
        """Every generation that receives writes: each index's live one and any in progress."""
        return [g for s in self.sections for g in self.manifest.generations.writable(s.name)]

    def generation_indexer(
        self, generations: Sequence[Generation], should_stop: Callable[[], bool] | None = None
    ) -> GenerationIndexer:
        """One indexer per distinct pipeline over ``generations``; ``should_stop``
        (default: the cancel event) is asked before each batch."""
        return self.pipelines.indexer(
            generations,
            content_store=self.content_store,
            target=self.generation_target,
            tombstone_keys=[g.key for g in self.writable()],
            batch_size=self.config.sync.index_batch_size,
            should_stop=should_stop or self.controls.cancel.is_set,
            progress=self.controls.index_progress,
        )

    def indexer(self) -> GenerationIndexer:
        """The indexer over every generation that receives writes."""
        return self.generation_indexer(self.writable())

    def drain(self, indexer: GenerationIndexer, only: Sequence[str] | None = None) -> IndexReport:
        """One drain of ``indexer``, its report counting cache hits, embeddings and time."""
        started = utcnow()
        hits0, misses0 = self._cache_counters()
        report = indexer.drain(only=only)
        hits1, misses1 = self._cache_counters()
        report.cache_hits, report.embedded = hits1 - hits0, misses1 - misses0
        report.duration_s = (utcnow() - started).total_seconds()
        return report

    def _cache_counters(self) -> tuple[int, int]:
        embedders = self.pipelines.embedders() + self._loaded_embedders()
        hits = sum(int(getattr(e, "hits", 0)) for e in embedders)
        return hits, sum(int(getattr(e, "embedded", 0)) for e in embedders)

    def drain_writable(self, problems: list[str], *, building: bool = True) -> IndexReport:
        """One pass over every generation that receives writes *now*, read again each call:
        a generation a rebuild created (or switched in) while a sync runs gets that sync's
        writes too, deletes and ACL changes included. ``building=False`` (a sync) leaves
        out the generations a rebuild is filling (``left_to_rebuild``). New problems are
        added to ``problems``."""
        generations = self.writable() if building else self.followed()
        current = self.generation_indexer(generations)
        report = self.drain(current)
        problems.extend(p for p in current.problems if p not in problems)
        return report

    def followed(self) -> list[Generation]:
        """The generations a sync drains: every write-state one but those in ``building``
        (a rebuild fills them from the content store: its backlog is the whole corpus, and
        one edit must not wait for it). Live, verifying and ready ones are followed."""
        return [g for g in self.writable() if g.state != BUILDING]

    def left_to_rebuild(self) -> list[LeftToRebuild]:
        """The building generations and what is pending for each: the work a sync left to
        ``headwater rebuild`` (or the scheduler's catch-up, or ``headwater index``)."""
        return [
            LeftToRebuild(
                g.index_name,
                g.generation,
                self.manifest.index_state.pending_count(g.key, self.pipelines.version(g)),
            )
            for g in self.writable()
            if g.state == BUILDING
        ]

    def purge_tombstones(self, retention_days: int) -> None:
        """Purge old tombstones, then tell every index it may forget them too."""
        purged = self.manifest.purge_tombstones(retention_days)
        if purged:
            for generation in self.writable():
                self.generation_sink(generation).forget_tombstones(purged)

    def close(self) -> None:
        """Close every open sink."""
        for sink in self._sinks.values():
            sink.close()
        self._sinks.clear()
