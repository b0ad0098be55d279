"""Installed plugins (connectors, sinks, embedders) by entry point group, read once.

``importlib.metadata.entry_points()`` reads the metadata of every installed distribution
on each call (~15 ms with this project's ~180 distributions); opening a workspace asks
for a connector class per source and a sink class per index several times over, so the
whole table is read once per process and each group selected from it.
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
