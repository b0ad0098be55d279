"""Connectors: one package per source type, registered by entry points.

``load_connector_class(type)`` imports a connector lazily from the ``headwater.connectors``
entry point group, so a workspace that only reads files never imports boto3.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.base import (
    Connector,
    ConnectorCapabilities,
    ConnectorOptions,
    Enumerating,
    LazyFetching,
    ReadStream,
    Scoped,
    SourceContext,
)
from headwater.errors import ConfigError
from headwater.plugins import entry_points

ENTRY_POINT_GROUP = "headwater.connectors"

__all__ = [
    "Connector",
    "ConnectorCapabilities",
    "ConnectorOptions",
    "Enumerating",
    "LazyFetching",
    "ReadStream",
    "Scoped",
    "SourceContext",
    "available_connector_types",
    "load_connector_class",
]


def available_connector_types() -> list[str]:
    """The connector types installed by entry point, sorted."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def load_connector_class(type_name: str) -> Any:
    """The connector class registered under ``type_name``; ConfigError if none is."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == type_name:
            return ep.load()
    known = ", ".join(available_connector_types()) or "none"
    raise ConfigError(
        f"source type {type_name!r} is not installed; expected one of: {known}. "
        "Fix the source's `type` or install the package that provides it."
    )
