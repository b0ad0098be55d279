"""The configured sources as connectors: the connector factory of a runtime.

``Sources`` answers every question about a configured source that needs the config and
the installed connector classes: its section, its connector (built fresh for each
operation), its identity for the sync gates (tenant, type, default access, the content
version its ``[parse]`` settings give), its plain sync settings, and whether its
connector can enumerate (what a prune needs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.config import LoadedConfig, SourceSection
from headwater.connectors import Connector, SourceContext, load_connector_class
from headwater.pipeline.parse import PARSER_VERSIONS
from headwater.pipeline.version import content_version
from headwater.ratelimit import RateStore, SharedGovernor
from headwater.sync.gates import SourceIdentity
from headwater.sync.settings import SourceSettings
from headwater.types import Access


class Sources:
    """The connector factory: configured sources, their connectors and sync settings."""

    def __init__(
        self,
        loaded: LoadedConfig,
        connector_types: Mapping[str, Any],
        rates: RateStore | None = None,
    ) -> None:
        self.loaded = loaded
        self.rates = rates  # the governor's shared budgets (None: requests go ungoverned)
        self.config = loaded.config
        self.connector_types = dict(connector_types)

    def section(self, source_id: str) -> SourceSection:
        """The configured source ``source_id``; ConfigError naming the known ones if none."""
        return self.config.source_by_id(source_id)

    def selected(self, sources: Sequence[str] | None) -> list[SourceSection]:
        """The sections of ``sources`` (each once, in order), or of every source."""
        if not sources:
            return list(self.config.source)
        return [self.section(s) for s in dict.fromkeys(sources)]

    def configured_ids(self) -> list[str]:
        """The ids of the configured sources, in config order."""
        return [s.id for s in self.config.source]

    def connector_class(self, type_name: str) -> Any:
        """The connector class of a source type (an injected one first)."""
        return self.connector_types.get(type_name) or load_connector_class(type_name)

    def can_enumerate(self, section: SourceSection) -> bool:
        """Whether the source's connector lists every object (a prune needs that)."""
        return callable(getattr(self.connector_class(section.type), "enumerate", None))

    def connector(self, source_id: str) -> Connector:
        """A new connector for the source (its caller closes it)."""
        section = self.section(source_id)
        cls = self.connector_class(section.type)
        governor = None
        if self.rates is not None:
            governor = SharedGovernor(self.rates, section.id, section.rates())
        context = SourceContext(
            source_id=section.id,
            state_dir=self.loaded.state_dir,
            config_root=self.loaded.root,
            governor=governor,
            checkpoint_every=section.batch_size,
        )
        connector: Connector = cls(self.loaded.source_options[section.id], context)
        return connector

    def identity(self, section: SourceSection) -> SourceIdentity:
        """Who the source's documents belong to and which content version reads them."""
        access = section.access.to_access() if section.access is not None else Access.nobody()
        parse_options = self.config.parse.options(section.parse)
        return SourceIdentity(
            tenant=self.config.workspace.tenant,
            source_type=section.type,
            source_id=section.id,
            default_access=access,
            # what [parse] says about the source's files changes how they are read
            pipeline_version=content_version(PARSER_VERSIONS, parse_options.describe()),
            parse_options=parse_options,
        )

    def settings(self, section: SourceSection) -> SourceSettings:
        """The plain settings the sync layer needs from a source's config section."""
        return SourceSettings(
            batch_size=section.batch_size,
            prune_max_fraction=section.prune_max_fraction,
            rules=section.rule_set(),
        )

    def access_warnings(self, sources: Sequence[str] | None = None) -> list[str]:
        """One warning per selected source whose documents nobody may see."""
        return [
            f"source {s.id!r} has {'no `access`' if s.access is None else 'an empty `access`'}: "
            "its documents are visible to no one. "
            "Add access = { groups = [...] }, { users = [...] } or { public = true }."
            for s in self.selected(sources)
            if s.access is None or not s.access.to_access().principals()
        ]


def close_connector(connector: object) -> None:
    """Close ``connector`` if it has a ``close``."""
    closer = getattr(connector, "close", None)
    if callable(closer):
        closer()
