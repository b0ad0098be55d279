"""Each index generation is indexed with its OWN recorded settings.

A generation records the settings it was built with (chunker, embedder without secrets,
sink type and schema). ``Pipelines`` turns a generation into what the indexer needs: its
sink (storage of its own), its chunker, its embedder (rebuilt from the recorded settings
by the caller's ``recorded_embedder``, behind the same embedding cache) and its index
version. Generations whose model equals the current one share the current embedder.
``GenerationIndexer`` drains every write-state generation of every index (live and in
progress), one indexer per distinct pipeline, so while a new model is built in, the live
generation keeps following the sources with the old one, and vectors of two models never
share a generation. Everything here takes explicit parts (no config, no workspace): the
composition root (``headwater.runtime``) says which embedder, sink class and options.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, SecretStr, ValidationError

from headwater.errors import ConfigError, HeadwaterError
from headwater.indexer.indexer import Indexer, IndexTarget
from headwater.indexer.report import IndexProgress, IndexReport
from headwater.manifest.content import ContentStore
from headwater.manifest.generations import Generation
from headwater.manifest.store import Manifest
from headwater.pipeline.chunk import CHUNKER_VERSION, ChunkerSettings
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.hooks import HookSet
from headwater.pipeline.version import chunking_version, index_version
from headwater.sinks.base import Sink, SinkContext

log = logging.getLogger(__name__)

SECRET_KEYS = ("api_key",)


def secret_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of an options model that hold secrets (``SecretStr``, optional or not),
    with the names every model keeps secret (``api_key``)."""
    found = set(SECRET_KEYS)
    for name, info in model.model_fields.items():
        if info.annotation is SecretStr or SecretStr in get_args(info.annotation):
            found.add(name)
    return frozenset(found)


def without_secrets(
    options: Mapping[str, Any], secrets: Collection[str] = SECRET_KEYS
) -> dict[str, Any]:
    """``options`` less the keys a generation never records: API keys, and ``secrets``
    (a sink's ``SecretStr`` fields: a password, a url with credentials in it)."""
    return {k: v for k, v in options.items() if k not in secrets}


def _recorded_options(generation: Generation, cls: Any, configured: str | None) -> Any:
    """The options a generation of another sink type than the configured one was built
    with; ConfigError when they lacked secrets (never recorded: the config had them)."""
    recorded = generation.settings["sink"]
    try:
        return cls.Options.model_validate(recorded["options"])
    except ValidationError as exc:
        unrecorded = sorted(secret_fields(cls.Options) - set(recorded["options"]))
        raise ConfigError(
            f"generation {generation.label} is a {recorded['type']!r} index, but index "
            f"{generation.index_name!r} is configured as {configured!r} now, and its options "
            f"cannot be rebuilt from the manifest ({exc.error_count()} invalid or missing; "
            f"secrets are never recorded: {', '.join(unrecorded) or 'none'}). To use it "
            f"again, configure {generation.index_name!r} as type = {recorded['type']!r} with "
            f"those options; or run `headwater rebuild {generation.index_name}` to build and "
            "switch to a generation of the configured type"
        ) from None


def settings_changes(have: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """What differs between a generation's recorded settings and the wanted ones."""
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
        """Every generation this indexer writes, over every pipeline."""
        return [t for ix in self.groups for t in ix.targets]

    @property
    def batch_size(self) -> int:
        """The smallest batch size of its indexers."""
        return min((ix.batch_size for ix in self.groups), default=1)

    def pending_count(self) -> dict[str, int]:
        """Pending documents per generation key, over every pipeline."""
        return {name: n for ix in self.groups for name, n in ix.pending_count().items()}

    def drain(self, *, only: Sequence[str] | None = None) -> IndexReport:
        """One pass of every pipeline; tombstones complete once all of them confirmed."""
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


@dataclass(frozen=True)
class CurrentModel:
    """The configured embedder as a generation records it, and how to get it."""

    described: Mapping[str, Any]  # {"type", "model", "dimension", "max_tokens"}
    embedder: Callable[[], Embedder]
    chunker: ChunkerSettings
    content_version: str  # with the hooks (``pipeline.version.hooked_version``)
    hooks: HookSet = field(default_factory=HookSet)
    # whether a source's documents whose chunking fails are indexed by their metadata
    stand_in: Callable[[str], bool] = lambda _source: True


class Pipelines:
    """Builds (and caches) each generation's pipeline and sink."""

    def __init__(
        self,
        manifest: Manifest,
        current: CurrentModel,
        *,
        recorded_embedder: Callable[[Mapping[str, Any]], Embedder],
        sink_class: Callable[[str], Any],
        configured_sink: Callable[[str], tuple[str, Any]],
        state_dir: Path,
    ) -> None:
        self.manifest = manifest
        self.current = current
        self._recorded_embedder = recorded_embedder
        self._sink_class = sink_class
        self._configured_sink = configured_sink
        self._state_dir = state_dir
        self._pipelines: dict[str, Pipeline] = {}
        self._embedders: dict[str, Embedder] = {}

    def version(self, generation: Generation) -> str:
        """The generation's index version, from its own settings and this code."""
        sink = generation.settings["sink"]
        pipeline = self.pipeline(generation)
        return index_version(pipeline.chunking_version, sink["type"], sink["schema_version"])

    def pipeline(self, generation: Generation) -> Pipeline:
        """The generation's pipeline (built once)."""
        key = generation.label
        if key not in self._pipelines:
            self._pipelines[key] = self._build(generation)
        return self._pipelines[key]

    def _build(self, generation: Generation) -> Pipeline:
        current = self.current
        model = generation.settings["model"]
        # max_document_chars is a safety limit, not part of the index version: today's
        # config applies to every generation (raising it lets a redrive index the document).
        recorded = {**generation.settings["chunker"]}
        recorded["max_document_chars"] = current.chunker.max_document_chars
        chunker = ChunkerSettings(**recorded)
        version = chunking_version(
            current.content_version, CHUNKER_VERSION, {"max_tokens": chunker.max_tokens}, model
        )
        if model == dict(current.described):
            dimension = int(current.described["dimension"])
            return Pipeline(version, chunker, dimension, current.embedder)
        label = generation.label
        return Pipeline(version, chunker, int(model["dimension"]), lambda: self._embedder(label))

    def _embedder(self, label: str) -> Embedder:
        if label in self._embedders:
            return self._embedders[label]
        name, number = label.rsplit("@", 1)
        generation = self.manifest.generations.get(name, int(number))
        model = generation.settings["model"]["model"]
        try:
            embedder = self._recorded_embedder(generation.settings["embedder"])
            if embedder.model_id != model:
                raise ConfigError(f"the embedder now reports model {embedder.model_id!r}")
            embedder.dimension  # noqa: B018  (loads the model: fail here, not mid-batch)
        except HeadwaterError as exc:
            raise ConfigError(
                f"generation {label} was built with embedder {model!r}, which cannot be used "
                f"any more ({exc}); searches keep serving {label}. Run `headwater rebuild "
                f"{name}` to build a generation with the configured embedder."
            ) from exc
        except Exception as exc:
            raise ConfigError(
                f"generation {label} was built with embedder {model!r}, which cannot be loaded "
                f"any more ({type(exc).__name__}: {exc}); searches keep serving {label}. Run "
                f"`headwater rebuild {name}`."
            ) from exc
        self._embedders[label] = embedder
        return embedder

    def indexer(
        self,
        generations: Sequence[Generation],
        *,
        content_store: ContentStore,
        target: Callable[[Generation], IndexTarget],
        tombstone_keys: list[str],
        batch_size: int,
        should_stop: Callable[[], bool],
        progress: Callable[[IndexProgress], None] | None = None,
    ) -> GenerationIndexer:
        """One ``Indexer`` per distinct pipeline (chunking version and chunker) over
        ``generations``; tombstones complete once every ``tombstone_keys`` one confirmed."""
        groups: dict[str, list[Generation]] = {}
        for gen in generations:
            pipeline = self.pipeline(gen)
            groups.setdefault(f"{pipeline.chunking_version}:{pipeline.chunker}", []).append(gen)
        indexers = []
        for members in groups.values():
            pipeline = self.pipeline(members[0])
            indexers.append(
                Indexer(
                    self.manifest,
                    content_store,
                    [target(g) for g in members],
                    pipeline.embedder,
                    pipeline.chunking_version,
                    pipeline.chunker,
                    batch_size=batch_size,
                    should_stop=should_stop,
                    progress=progress,
                    hooks=self.current.hooks,
                    stand_in=self.current.stand_in,
                )
            )
        return GenerationIndexer(indexers, tombstone_keys)

    def embedders(self) -> list[Embedder]:
        """The embedders of generations whose model differs from the current one."""
        return list(self._embedders.values())

    def sink(self, generation: Generation) -> Sink:
        """A sink serving ``generation`` (built from its recorded sink type)."""
        recorded = generation.settings["sink"]
        configured_type, configured_options = self._configured_sink(generation.index_name)
        cls = self._sink_class(recorded["type"])
        if recorded["type"] == configured_type:
            options = configured_options or cls.Options()
        else:
            options = _recorded_options(generation, cls, configured_type)
        context = SinkContext(
            generation.index_name,
            self._state_dir,
            self.pipeline(generation).dimension,
            generation.generation,
        )
        sink: Sink = cls(options, context)
        return sink

    def close(self) -> None:
        """Close the embedders this built."""
        for embedder in self._embedders.values():
            closer = getattr(embedder, "close", None)
            if callable(closer):
                closer()
        self._embedders.clear()
