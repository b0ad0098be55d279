"""``headwater.toml``: read, substitute ``${ENV}``, validate everything, report all at once.

Validation happens in two passes that both collect problems instead of stopping at the
first: the common shape (workspace, manifest, embedder, indexes, sources' shared keys),
then each source's and index's own options against the plugin's ``Options`` model. Every
problem names its key path. Secrets are ``SecretStr`` in the plugin models, so neither
logs nor ``--json`` output ever show them.

The package has three modules: ``sections`` (one pydantic model per table), ``rules``
(checks across tables) and ``load`` (reading the file and collecting every problem).
Everything is imported from ``headwater.config``.
"""

from __future__ import annotations

from headwater.config.events import EventsSection
from headwater.config.identity import IdentitySection
from headwater.config.load import (
    COMMON_SOURCE_KEYS,
    ENV_REFERENCE,
    UNSET,
    LoadedConfig,
    load_config,
    resolve_path,
)
from headwater.config.rules import (
    BROKER_SCHEMES,
    api_key_problems,
    executor_problems,
    executor_warnings,
)
from headwater.config.sections import (
    AccessSection,
    ChunkerSection,
    ContentSection,
    EmbedderSection,
    HeadwaterConfig,
    IndexSection,
    ManifestSection,
    ParseSection,
    SourceSection,
    SyncSection,
    WorkspaceSection,
)
from headwater.config.service import (
    ApiKeySection,
    ApiPrincipals,
    ApiSection,
    ExecutorQueues,
    ExecutorSection,
    SchedulerSection,
)
from headwater.config.strict import Strict
from headwater.units import parse_duration

__all__ = [
    "BROKER_SCHEMES",
    "COMMON_SOURCE_KEYS",
    "ENV_REFERENCE",
    "UNSET",
    "AccessSection",
    "ApiKeySection",
    "ApiPrincipals",
    "ApiSection",
    "ChunkerSection",
    "ContentSection",
    "EmbedderSection",
    "EventsSection",
    "ExecutorQueues",
    "ExecutorSection",
    "HeadwaterConfig",
    "IdentitySection",
    "IndexSection",
    "LoadedConfig",
    "ManifestSection",
    "ParseSection",
    "SchedulerSection",
    "SourceSection",
    "Strict",
    "SyncSection",
    "WorkspaceSection",
    "api_key_problems",
    "executor_problems",
    "executor_warnings",
    "load_config",
    "parse_duration",
    "resolve_path",
]
