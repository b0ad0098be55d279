"""Connectors that pyproject.toml declares, for tests of a checkout whose installed
metadata predates them (an editable install made before the entry point was added):
``use_declared_connectors`` adds the declared ``headwater.connectors`` entry points
that the installed metadata lacks, so a connector missing from pyproject.toml still fails."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import headwater.plugins

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
GROUP = "headwater.connectors"


def use_declared_connectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``load_connector_class`` see every connector pyproject.toml declares."""
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"][GROUP]
    installed = headwater.plugins._installed()
    have = {ep.name for ep in installed.get(GROUP, ())}
    extra = tuple(
        metadata.EntryPoint(name=name, value=value, group=GROUP)
        for name, value in declared.items()
        if name not in have
    )
    table = {**installed, GROUP: installed.get(GROUP, ()) + extra}
    monkeypatch.setattr(headwater.plugins, "_installed", lambda: table)
