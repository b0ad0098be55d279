"""Index sinks: projections of the manifest, registered by entry points.

``load_sink_class(type)`` imports a sink lazily from the ``headwater.sinks`` group.
"""

from __future__ import annotations

from typing import Any

from headwater.errors import ConfigError
from headwater.plugins import entry_points
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
    "SinkContext",
    "SinkOptions",
    "WriteOutcome",
    "available_sink_types",
    "load_sink_class",
]


def available_sink_types() -> list[str]:
    """The sink types installed by entry point, sorted."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def load_sink_class(type_name: str) -> Any:
    """The sink class registered as ``type_name``, or ConfigError naming the installed ones."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == type_name:
            return ep.load()
    known = ", ".join(available_sink_types()) or "none"
    raise ConfigError(
        f"index type {type_name!r} is not installed; expected one of: {known}. "
        "Fix the index's `type`."
    )
