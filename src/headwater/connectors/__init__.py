"""Connectors: one package per source type, registered by entry points.

``load_connector_class(type)`` imports a connector lazily from the ``headwater.connectors``
entry point group, so a workspace that only reads files never imports boto3; what it
returns is a ``ConnectorClass``.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

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
from headwater.plugins import entry_points, load_plugin

ENTRY_POINT_GROUP = "headwater.connectors"

__all__ = [
    "Connector",
    "ConnectorCapabilities",
    "ConnectorClass",
    "ConnectorOptions",
    "Enumerating",
    "LazyFetching",
    "ReadStream",
    "Scoped",
    "SourceContext",
    "available_connector_types",
    "load_connector_class",
]


class ConnectorClass(Protocol):
    """A connector class: its ``Options`` model, and a constructor from validated options
    (an instance of that model) and the source's context."""

    @property
    def Options(self) -> type[ConnectorOptions]:
        """The pydantic model of the source's config keys."""
        ...

    def __call__(self, options: Any, context: SourceContext) -> Connector:
        """A connector over one configured source."""
        ...


def available_connector_types() -> list[str]:
    """The connector types the installed entry points provide, sorted."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def load_connector_class(type_name: str) -> ConnectorClass:
    """The connector class registered under ``type_name``; ConfigError if none is."""
    loaded = load_plugin(ENTRY_POINT_GROUP, type_name)
    if loaded is not None:
        return cast("ConnectorClass", loaded)
    known = ", ".join(available_connector_types()) or "none"
    raise ConfigError(
        f"source type {type_name!r} is not installed; expected one of: {known}. "
        "Fix the source's `type` or install the package that provides it."
    )
