"""The composition root: every part of a workspace, built once from its loaded config.

``Runtime`` opens the manifest (migrating it), the content store, the connector factory
(``Sources``), the generation wiring (``Pipelines``), the indexes (``Indexes``) and the
change-event publisher (``events``, when ``[events]`` is configured), and
computes the versions: the content version (parsers; decides whether a source object is
re-read) and the chunking version (chunker and embedder; decides whether stored content
is re-chunked and re-embedded). It has no operations of its own: executors, rebuilds,
the scheduler and the ``Workspace`` facade take it and use its parts. Nothing heavy
(connectors' clients, sinks, the embedding model) is built until a part needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from headwater.clock import utcnow
from headwater.config import (
    ContentSection,
    EmbedderSection,
    LoadedConfig,
    SourceSection,
    load_config,
)
from headwater.errors import ConfigError
from headwater.events import EventPublisher, publisher_for
from headwater.indexer.generations import (
    SECRET_KEYS,
    CurrentModel,
    Pipelines,
    without_secrets,
)
from headwater.manifest.content import ContentStore, FolderContentStore
from headwater.manifest.content_s3 import S3ContentStore
from headwater.manifest.store import Manifest
from headwater.pipeline.chunk import CHUNKER_VERSION, ChunkerSettings
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.embed.registry import EmbedderSpec, cached_embedder, describe_embedder
from headwater.pipeline.hooks import HookChain, HookSet, load_hooks
from headwater.pipeline.parse import PARSER_VERSIONS
from headwater.pipeline.version import chunking_version, content_version, hooked_version
from headwater.runtime.controls import Controls
from headwater.runtime.indexes import Indexes
from headwater.runtime.rates import open_rate_store
from headwater.runtime.sources import Sources
from headwater.search.alias_source import AliasSource
from headwater.search.aliases import IdentityAliases
from headwater.sinks import SinkClass, load_sink_class
from headwater.units import check_duration, parse_duration


def embedder_spec(section: EmbedderSection) -> EmbedderSpec:
    """The ``[embedder]`` table as the plain spec the embedder registry takes."""
    return EmbedderSpec(
        type=section.type,
        runtime=section.runtime,
        runtime_set="runtime" in section.model_fields_set,
        options=section.options(),
    )


def _made_dir(path: Path) -> Path:
    """``path``, created if missing; ConfigError when it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # not writable, or a file in the way: not a bug
        raise ConfigError(
            f"cannot create the state directory {path} ({exc.strerror or exc}); "
            "make it a writable directory, or point workspace.state_dir in "
            "headwater.toml at one."
        ) from exc
    return path


def open_content_store(section: ContentSection, state_dir: Path) -> ContentStore:
    """The ``[content]`` store: the folder ``state_dir/content``, or the S3 url's bucket."""
    if section.url is None:
        return FolderContentStore(state_dir / "content")
    return S3ContentStore(
        section.url,
        endpoint_url=section.endpoint_url,
        region=section.region,
        access_key_id=section.access_key_id,
        secret_access_key=section.secret_access_key,
        session_token=section.session_token,
        addressing_style=section.addressing_style,
    )


class Runtime:
    """A workspace's parts, wired once from its config. Close it when done."""

    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        embedder: Embedder | None = None,
        connector_types: Mapping[str, Any] | None = None,
        sink_types: Mapping[str, Any] | None = None,
    ) -> None:
        self.loaded = loaded
        self.config = loaded.config
        self.state_dir = _made_dir(loaded.state_dir)
        self.manifest = Manifest.open(
            loaded.manifest_url,
            max_attempts=self.config.sync.attempts,
            lease_seconds=self.config.sync.lease_seconds,
        )
        self.events = self._events()
        self.content_store = open_content_store(self.config.content, self.state_dir)
        identity = self.config.identity
        self.alias_source = AliasSource(
            identity.aliases,
            query=identity.query,
            url=identity.url.get_secret_value() if identity.url else None,
            ttl=check_duration(identity.cache_ttl).total_seconds(),
            file=identity.file_path(loaded.root),
        )
        self.controls = Controls()
        self.rate_store = open_rate_store(self.config, self.manifest)
        self.sources = Sources(loaded, connector_types or {}, self.rate_store)
        self._sink_types = dict(sink_types or {})
        self._embedder = embedder
        self.injected_embedder = embedder is not None
        if embedder is not None:
            described = (embedder.model_id, embedder.dimension, embedder.max_tokens)
        else:
            described = describe_embedder(embedder_spec(self.config.embedder))
        self.model_id, self.dimension, self.max_tokens = described
        budget = self.config.chunker.max_tokens or self.max_tokens
        self.chunker = ChunkerSettings(
            max_tokens=min(budget, self.max_tokens),
            max_document_chars=self.config.chunker.max_document_chars,
        )
        self.embedder_type = (
            self.config.embedder.type if embedder is None else type(embedder).__name__
        )
        self._wire()

    def _wire(self) -> None:
        """The versions, then the generation wiring and the indexes over them."""
        # Parsers only: decides whether a source object is re-read (the sync gates).
        self.content_version = content_version(PARSER_VERSIONS)
        self.pipeline_version = self.content_version
        model = {
            "type": self.embedder_type,
            "model": self.model_id,
            "dimension": self.dimension,
            "max_tokens": self.max_tokens,
        }
        # Hooks, chunker and embedder: re-chunk and re-embed stored content, never re-read.
        hooks = self._hooks()
        hooked = hooked_version(self.content_version, hooks.describe())
        self.chunking_version = chunking_version(
            hooked, CHUNKER_VERSION, {"max_tokens": self.chunker.max_tokens}, model
        )
        self.pipelines = Pipelines(
            self.manifest,
            CurrentModel(
                model, lambda: self.embedder, self.chunker, hooked, hooks, self._stand_in()
            ),
            recorded_embedder=self.recorded_embedder,
            sink_class=self.sink_class,
            configured_sink=self._configured_sink,
            state_dir=self.state_dir,
        )
        self.indexes = Indexes(
            self.config,
            self.manifest,
            self.content_store,
            self.pipelines,
            self.controls,
            chunking_version=self.chunking_version,
            sink_class=self.sink_class,
            embedder_record=self._embedder_record(),
            loaded_embedders=lambda: [] if self._embedder is None else [self._embedder],
        )
        self.indexes.ensure_live()

    def _stand_in(self) -> Callable[[str], bool]:
        """Whether a source's documents whose chunking fails are indexed by their metadata
        (``[parse] metadata_only_on_failure``, a source's own first)."""
        parse = self.config.parse
        wanted = {s.id: parse.options(s.parse).metadata_only_on_failure for s in self.config.source}
        default = parse.options().metadata_only_on_failure
        return lambda source_id: wanted.get(source_id, default)

    def _hooks(self) -> HookSet:
        """The workspace's ``[[hooks]]`` and the chain of each source with its own
        ``[[source.hooks]]`` (or ``workspace_hooks = false``); ConfigError names the entry."""
        workspace = load_hooks([(h.name, h.options()) for h in self.config.hooks])
        sources: dict[str, HookChain] = {}
        for section in self.config.source:
            if not section.hooks and section.workspace_hooks:
                continue  # the workspace's chain
            where = f"[[source.hooks]] of source {section.id!r}"
            own = load_hooks([(h.name, h.options()) for h in section.hooks], where)
            inherited = workspace.hooks if section.workspace_hooks else ()
            sources[section.id] = HookChain((*inherited, *own.hooks))
        return HookSet(workspace, sources)

    def _events(self) -> EventPublisher | None:
        """The ``[events]`` publisher (None: no events, and the outbox stays off)."""
        section = self.config.events
        if section is None:
            return None
        self.manifest.outbox.enabled = True
        secret = section.secret.get_secret_value() if section.secret is not None else None
        return publisher_for(
            self.manifest.outbox,
            self.config.workspace.tenant,
            kind=section.type,
            url=section.address,
            stream=section.stream,
            prefix=section.subject_prefix,
            secret=secret,
        )

    @classmethod
    def open(
        cls,
        path: str | Path = "headwater.toml",
        *,
        embedder: Embedder | None = None,
        connector_types: Mapping[str, Any] | None = None,
        sink_types: Mapping[str, Any] | None = None,
    ) -> Runtime:
        """The runtime of the config at ``path`` (or a directory holding one)."""
        loaded = load_config(Path(path), connector_types=connector_types, sink_types=sink_types)
        return cls(
            loaded, embedder=embedder, connector_types=connector_types, sink_types=sink_types
        )

    @property
    def aliases(self) -> IdentityAliases:
        """The ``[identity]`` aliases in force now (the query's rows cached for its TTL)."""
        return self.alias_source.current()

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (the model is loaded on first use)."""
        if self._embedder is None:
            self._embedder = cached_embedder(embedder_spec(self.config.embedder), self.state_dir)
        return self._embedder

    def loaded_embedder(self) -> Embedder | None:
        """The configured embedder if something loaded it already, else None."""
        return self._embedder

    def sink_class(self, type_name: str) -> SinkClass:
        """The sink class of an index type (an injected one first)."""
        given: SinkClass | None = self._sink_types.get(type_name)
        return given or load_sink_class(type_name)

    def _configured_sink(self, index_name: str) -> tuple[str, Any]:
        section = self.indexes.section(index_name)
        return section.type, self.loaded.index_options.get(section.name)

    def _embedder_record(self) -> dict[str, Any]:
        """What a generation built from the config records of its embedder (no secrets)."""
        if self.injected_embedder:
            return {"type": self.embedder_type}
        dumped = self.config.embedder.model_dump(exclude_unset=True, exclude={"cache_max_bytes"})
        return without_secrets(dumped)

    def recorded_embedder(self, recorded: Mapping[str, Any]) -> Embedder:
        """An embedder built from a generation's recorded settings, with today's secrets."""
        settings = dict(recorded)
        configured = self.config.embedder
        if settings.get("type") == configured.type and not self.injected_embedder:
            for secret in SECRET_KEYS:  # secrets are never recorded: take today's
                if secret in configured.options():
                    settings[secret] = configured.options()[secret]
        section = EmbedderSection.model_validate(settings)
        return cached_embedder(embedder_spec(section), self.state_dir)

    def prune_due(self, section: SourceSection) -> bool:
        """Whether the source's ``prune_every`` has passed since its last prune."""
        interval = parse_duration(section.prune_every)
        if interval is None:
            return True
        last = self.manifest.runs.last_prune_at(section.id)
        return last is None or utcnow() - last >= interval

    def close(self) -> None:
        """Close the sinks, the embedders and the manifest."""
        self.indexes.close()
        self.pipelines.close()
        closer = getattr(self._embedder, "close", None)
        if callable(closer):
            closer()
        closer = getattr(self.rate_store, "close", None)
        if callable(closer) and self.rate_store is not self.manifest.rates:
            closer()
        self.manifest.close()
