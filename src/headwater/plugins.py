"""Installed plugins (connectors, sinks, embedders) by entry point group, read once.

``importlib.metadata.entry_points()`` reads the metadata of every installed distribution
on each call (~15 ms with this project's ~180 distributions); opening a workspace asks
for a connector class per source and a sink class per index several times over, so the
whole table is read once per process and each group selected from it. ``load_plugin``
imports the object one entry point names; each group's loader (``load_connector_class``,
``load_sink_class``) states what that object is.
"""

from __future__ import annotations

import functools
from importlib import metadata


@functools.cache
def _installed() -> dict[str, tuple[metadata.EntryPoint, ...]]:
    everything = metadata.entry_points()
    return {group: tuple(everything.select(group=group)) for group in everything.groups}


def entry_points(*, group: str) -> list[metadata.EntryPoint]:
    """The entry points of ``group`` among the installed distributions."""
    return list(_installed().get(group, ()))


def load_plugin(group: str, name: str) -> object | None:
    """The object the entry point ``name`` of ``group`` names (imported now), or None."""
    for ep in entry_points(group=group):
        if ep.name == name:
            loaded: object = ep.load()
            return loaded
    return None
