"""Index sinks: projections of the manifest, registered by entry points.

``load_sink_class(type)`` imports a sink lazily from the ``headwater.sinks`` group; what
it returns is a ``SinkClass``.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from headwater.errors import ConfigError
from headwater.plugins import entry_points, load_plugin
from headwater.sinks.base import (
    InventoryRow,
    SearchRequest,
    Sink,
    SinkCapabilities,
    SinkContext,
    SinkOptions,
    WriteOutcome,
)

ENTRY_POINT_GROUP = "headwater.sinks"

__all__ = [
    "InventoryRow",
    "SearchRequest",
    "Sink",
    "SinkCapabilities",
    "SinkClass",
    "SinkContext",
    "SinkOptions",
    "WriteOutcome",
    "available_sink_types",
    "load_sink_class",
]


class SinkClass(Protocol):
    """A sink class: its ``Options`` model, its storage schema version, and a constructor
    from validated options (an instance of that model) and the index's context."""

    @property
    def Options(self) -> type[SinkOptions]:
        """The pydantic model of the index's config keys."""
        ...

    @property
    def schema_version(self) -> str:
        """The version of what the sink stores; part of the index version."""
        ...

    def __call__(self, options: Any, context: SinkContext) -> Sink:
        """A sink serving one generation of one configured index."""
        ...


def available_sink_types() -> list[str]:
    """The sink types the installed entry points provide, sorted."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def load_sink_class(type_name: str) -> SinkClass:
    """The sink class registered under ``type_name``; ConfigError if none is."""
    loaded = load_plugin(ENTRY_POINT_GROUP, type_name)
    if loaded is not None:
        return cast("SinkClass", loaded)
    known = ", ".join(available_sink_types()) or "none"
    raise ConfigError(
        f"index type {type_name!r} is not installed; expected one of: {known}. "
        "Fix the index's `type`."
    )
