"""What a workspace holds: its runtime and executor, its lifetime, and its parts.

``WorkspaceBase`` is the half of the facade that does nothing: ``open`` builds the
composition root (``headwater.runtime.Runtime``) and the executor ``[executor] type``
names, ``close`` (or leaving the ``with`` block) releases them, and the accessors hand
callers the runtime's parts by name: the configured sources and indexes, each index's
live generation and sink, the embedder, the progress callbacks, the schedule store.
``headwater.workspace.Workspace`` adds every operation on top of it; this split keeps
"what is this workspace made of" apart from "what can it do" (the way httpx keeps its
``BaseClient`` apart from ``Client``). Like the facade, it imports no executor, the
scheduler, the CLI or the HTTP API: executors are found by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self

from headwater.config import IndexSection, SourceSection
from headwater.indexer.report import IndexProgress
from headwater.manifest.generations import Generation
from headwater.manifest.schedule import ScheduleStore
from headwater.pipeline.embed.base import Embedder
from headwater.runtime import Runtime
from headwater.runtime.executor import Executor, executor_factory
from headwater.sinks import Sink
from headwater.types import CountProgress


class WorkspaceBase:
    """A workspace's runtime and executor, opened from its config, with its parts."""

    def __init__(self, runtime: Runtime, executor: Executor) -> None:
        self.runtime, self.executor = runtime, executor
        self.sources, self.indexes = runtime.sources, runtime.indexes
        self.pipelines = runtime.pipelines
        self.loaded, self.config, self.state_dir = runtime.loaded, runtime.config, runtime.state_dir
        self.manifest, self.content_store = runtime.manifest, runtime.content_store
        self.cancel = runtime.controls.cancel  # set it: running work stops after its batch
        self.chunker = runtime.chunker
        self.content_version = self.pipeline_version = runtime.content_version
        self.chunking_version = runtime.chunking_version

    @classmethod
    def open(
        cls,
        path: str | Path = "headwater.toml",
        *,
        embedder: Embedder | None = None,
        connector_types: Mapping[str, Any] | None = None,
        sink_types: Mapping[str, Any] | None = None,
    ) -> Self:
        """Open the workspace whose config is ``path`` (or a directory holding one).

        ``embedder`` replaces the configured embedder (it is used as given, without the
        cache); ``connector_types`` and ``sink_types`` add connector and sink classes by
        type name. All three are seams for tests and embedding applications; the CLI uses
        none. The executor is the one ``[executor] type`` names.
        """
        runtime = Runtime.open(
            path, embedder=embedder, connector_types=connector_types, sink_types=sink_types
        )
        try:
            executor = executor_factory(runtime.config.executor.type)(runtime)
        except BaseException:
            runtime.close()
            raise
        return cls(runtime, executor)

    def close(self) -> None:
        """Close the sinks, the embedders and the manifest."""
        self.runtime.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _executor(self, name: str | None) -> Executor:
        """The executor called ``name``: this workspace's own, or one built for the call."""
        if name is None or name == self.executor.name:
            return self.executor
        return executor_factory(name)(self.runtime)

    # -- the runtime's parts ---------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (the model is loaded on first use)."""
        return self.runtime.embedder

    @property
    def index_progress(self) -> Callable[[IndexProgress], None] | None:
        """Called as indexing goes (the CLI's bars)."""
        return self.runtime.controls.index_progress

    @index_progress.setter
    def index_progress(self, value: Callable[[IndexProgress], None] | None) -> None:
        """Set the indexing progress callback (None: none)."""
        self.runtime.controls.index_progress = value

    @property
    def count_progress(self) -> CountProgress | None:
        """Called as a prune's enumeration or a reconcile counts."""
        return self.runtime.controls.count_progress

    @count_progress.setter
    def count_progress(self, value: CountProgress | None) -> None:
        """Set the counting progress callback (None: none)."""
        self.runtime.controls.count_progress = value

    def source_section(self, source_id: str) -> SourceSection:
        """The configured source ``source_id``."""
        return self.sources.section(source_id)

    @property
    def index_sections(self) -> list[IndexSection]:
        """The configured indexes."""
        return self.indexes.sections

    def index_section(self, name: str) -> IndexSection:
        """The configured index ``name``."""
        return self.indexes.section(name)

    def live_generation(self, name: str) -> Generation:
        """The generation of index ``name`` that searches read."""
        return self.indexes.live_generation(name)

    def sink(self, name: str) -> Sink:
        """The sink of the index's live generation."""
        return self.indexes.sink(name)

    def take_over_indexes(self, name: str | None = None, *, empty: bool) -> list[str]:
        """Bind the indexes another manifest holds to this one (``empty``: empty them)."""
        return self.indexes.take_over(name, empty=empty)

    def schedule_store(self) -> ScheduleStore:
        """The scheduler's run history and pauses, in this workspace's manifest database."""
        return ScheduleStore(self.manifest.engine)
