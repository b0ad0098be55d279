"""Each index generation is indexed with its OWN recorded settings.

A generation records the settings it was built with (chunker, embedder without secrets,
sink type and schema). ``Pipelines`` turns a generation into what the indexer needs: its
sink (storage of its own), its chunker, its embedder (rebuilt from the recorded settings,
behind the same embedding cache; an openai endpoint gets its secret from the current
config) and its index version. Generations whose settings equal the config share the
workspace's embedder. ``GenerationIndexer`` drains every write-state generation of every
index (live and in progress), one indexer per distinct pipeline, so while a new model is
built in, the live generation keeps following the sources with the old one, and vectors
of two models never share a generation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.config import EmbedderSection, IndexSection
from headwater.errors import ConfigError, HeadwaterError
from headwater.indexer.indexer import Indexer, IndexTarget
from headwater.indexer.report import IndexReport
from headwater.manifest.generations import Generation
from headwater.pipeline.chunk import CHUNKER_VERSION, ChunkerSettings
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.version import chunking_version, index_version
from headwater.sinks.base import Sink, SinkContext

if TYPE_CHECKING:
    from headwater.workspace import Workspace

log = logging.getLogger(__name__)

SECRET_KEYS = ("api_key",)


@dataclass
class Pipeline:
    """How one generation turns stored content into index entries."""

    chunking_version: str
    chunker: ChunkerSettings
    dimension: int
    embedder: Callable[[], Embedder]


@dataclass
class GenerationIndexer:
    """Drains every write-state generation; same interface as ``Indexer.drain``."""

    groups: list[Indexer]
    tombstone_keys: list[str]
    problems: list[str] = field(default_factory=list)

    @property
    def targets(self) -> list[IndexTarget]:
        return [t for ix in self.groups for t in ix.targets]

    @property
    def batch_size(self) -> int:
        return min((ix.batch_size for ix in self.groups), default=1)

    def pending_count(self) -> dict[str, int]:
        """Pending documents per generation key, over every pipeline."""
        return {name: n for ix in self.groups for name, n in ix.pending_count().items()}

    def drain(self, *, only: Sequence[str] | None = None) -> IndexReport:
        report = IndexReport()
        for indexer in self.groups:
            try:
                report.add(indexer.drain(only=only, complete_tombstones=False))
            except ConfigError as exc:  # the generation's settings cannot be used any more
                names = ", ".join(t.name for t in indexer.targets)
                message = f"indexing into {names} stopped: {exc}"
                log.warning("%s", message)
                if message not in self.problems:
                    self.problems.append(message)
        if self.groups:
            self.groups[0].complete_tombstones(self.tombstone_keys)
        return report


def _without_secrets(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k not in SECRET_KEYS}


class Pipelines:
    """Builds (and caches) each generation's pipeline and sink for one workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._pipelines: dict[str, Pipeline] = {}
        self._embedders: dict[str, Embedder] = {}

    # -- settings --------------------------------------------------------------------

    def config_settings(self, section: IndexSection) -> dict[str, Any]:
        """What a generation built now from the config records (no secrets)."""
        ws = self.ws
        embedder_section = (
            {"type": ws.embedder_type}
            if ws.injected_embedder
            else _without_secrets(
                ws.config.embedder.model_dump(exclude_unset=True, exclude={"cache_max_bytes"})
            )
        )
        cls = ws.sink_class(section.type)
        return {
            "embedder": embedder_section,
            "model": {
                "type": ws.embedder_type,
                "model": ws.model_id,
                "dimension": ws.dimension,
                "max_tokens": ws.max_tokens,
            },
            "chunker": {
                "max_tokens": ws.chunker.max_tokens,
                "max_document_chars": ws.chunker.max_document_chars,
            },
            "sink": {
                "type": section.type,
                "schema_version": cls.schema_version,
                "options": _without_secrets(section.options()),
            },
        }

    def version(self, generation: Generation) -> str:
        """The generation's index version, from its own settings and this code."""
        sink = generation.settings["sink"]
        pipeline = self.pipeline(generation)
        return index_version(pipeline.chunking_version, sink["type"], sink["schema_version"])

    def changes(self, generation: Generation, section: IndexSection) -> list[str]:
        """What differs between the generation's settings and the config's."""
        wanted = self.config_settings(section)
        have = generation.settings
        out = []
        if have.get("chunker") != wanted["chunker"]:
            out.append("chunker")
        if have.get("model") != wanted["model"]:
            out.append("embedder")
        if (
            have.get("sink", {}).get("type") != wanted["sink"]["type"]
            or have.get("sink", {}).get("schema_version") != wanted["sink"]["schema_version"]
        ):
            out.append("sink schema")
        return out

    # -- pipelines -------------------------------------------------------------------

    def pipeline(self, generation: Generation) -> Pipeline:
        key = generation.label
        if key not in self._pipelines:
            self._pipelines[key] = self._build(generation)
        return self._pipelines[key]

    def _build(self, generation: Generation) -> Pipeline:
        ws = self.ws
        model = generation.settings["model"]
        # max_document_chars is a safety limit, not part of the index version: today's
        # config applies to every generation (raising it lets a redrive index the document).
        recorded = {**generation.settings["chunker"]}
        recorded["max_document_chars"] = ws.chunker.max_document_chars
        chunker = ChunkerSettings(**recorded)
        current = {
            "type": ws.embedder_type,
            "model": ws.model_id,
            "dimension": ws.dimension,
            "max_tokens": ws.max_tokens,
        }
        version = chunking_version(
            ws.content_version, CHUNKER_VERSION, {"max_tokens": chunker.max_tokens}, model
        )
        if model == current:
            return Pipeline(version, chunker, ws.dimension, lambda: ws.embedder)
        label = generation.label
        return Pipeline(version, chunker, int(model["dimension"]), lambda: self._embedder(label))

    def _embedder(self, label: str) -> Embedder:
        if label in self._embedders:
            return self._embedders[label]
        from headwater.pipeline.embed.registry import cached_embedder
        from headwater.workspace import embedder_spec

        name, number = label.rsplit("@", 1)
        generation = self.ws.manifest.generations.get(name, int(number))
        recorded = dict(generation.settings["embedder"])
        configured = self.ws.config.embedder
        if recorded.get("type") == configured.type and not self.ws.injected_embedder:
            for secret in SECRET_KEYS:  # secrets are never recorded: take today's
                if secret in configured.options():
                    recorded[secret] = configured.options()[secret]
        try:
            section = EmbedderSection.model_validate(recorded)
            embedder = cached_embedder(embedder_spec(section), self.ws.state_dir)
            if embedder.model_id != generation.settings["model"]["model"]:
                raise ConfigError(f"the embedder now reports model {embedder.model_id!r}")
            embedder.dimension  # noqa: B018  (loads the model: fail here, not mid-batch)
        except HeadwaterError as exc:
            raise ConfigError(
                f"generation {label} was built with embedder "
                f"{generation.settings['model']['model']!r}, which cannot be used any more "
                f"({exc}); searches keep serving {label}. Run `headwater rebuild {name}` "
                "to build a generation with the configured embedder."
            ) from exc
        except Exception as exc:
            raise ConfigError(
                f"generation {label} was built with embedder "
                f"{generation.settings['model']['model']!r}, which cannot be loaded any more "
                f"({type(exc).__name__}: {exc}); searches keep serving {label}. Run "
                f"`headwater rebuild {name}`."
            ) from exc
        self._embedders[label] = embedder
        return embedder

    def indexer(
        self,
        generations: Sequence[Generation],
        should_stop: Callable[[], bool] | None = None,
    ) -> GenerationIndexer:
        """One ``Indexer`` per distinct pipeline (chunking version and chunker) over
        ``generations``; tombstones complete once every write-state generation confirmed.
        ``should_stop`` (default: the workspace's cancel event) is asked before each batch."""
        ws = self.ws
        groups: dict[str, list[Generation]] = {}
        for gen in generations:
            pipeline = self.pipeline(gen)
            groups.setdefault(f"{pipeline.chunking_version}:{pipeline.chunker}", []).append(gen)
        indexers = []
        for members in groups.values():
            pipeline = self.pipeline(members[0])
            indexers.append(
                Indexer(
                    ws.manifest,
                    ws.content_store,
                    [ws.generation_target(g) for g in members],
                    pipeline.embedder,
                    pipeline.chunking_version,
                    pipeline.chunker,
                    batch_size=ws.config.sync.index_batch_size,
                    should_stop=should_stop or ws.cancel.is_set,
                    progress=ws.index_progress,
                )
            )
        writable = [
            g.key for s in ws.index_sections for g in ws.manifest.generations.writable(s.name)
        ]
        return GenerationIndexer(indexers, writable)

    def embedders(self) -> list[Embedder]:
        return list(self._embedders.values())

    def sink(self, generation: Generation) -> Sink:
        """A sink serving ``generation`` (built from its recorded sink type)."""
        ws = self.ws
        recorded = generation.settings["sink"]
        section = ws.index_section(generation.index_name)
        cls = ws.sink_class(recorded["type"])
        if recorded["type"] == section.type:
            options = ws.loaded.index_options.get(section.name) or cls.Options()
        else:
            options = cls.Options.model_validate(recorded["options"])
        context = SinkContext(
            generation.index_name,
            ws.state_dir,
            self.pipeline(generation).dimension,
            generation.generation,
        )
        sink: Sink = cls(options, context)
        return sink

    def close(self) -> None:
        for embedder in self._embedders.values():
            closer = getattr(embedder, "close", None)
            if callable(closer):
                closer()
        self._embedders.clear()
