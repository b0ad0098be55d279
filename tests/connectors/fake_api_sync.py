"""The workspace a connector's sync test opens over one fake-API source (``tests/fakes``).

Each such test runs the real sync runner over a workspace in ``tmp_path`` with the fake
embedder and one sqlite index, and a single source that retries without waiting and may
prune up to 90 % of its documents; the connector's own keys (its type, the fake's URL,
a secret read through ``${ENV}``, paging) come from the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from declared import use_declared_connectors

from headwater import Workspace

WORKSPACE = (
    '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
    '[embedder]\ntype = "fake"\ndimension = 32\n'
    '[[index]]\nname = "main"\ntype = "sqlite"\n'
)
NO_WAITS = "retry_initial_wait = 0.0\nretry_max_wait = 0.0\nprune_max_fraction = 0.9\n"


def use_secret(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    """``${name}`` in headwater.toml reads ``value``; and every connector pyproject.toml
    declares is installed (``declared.use_declared_connectors``)."""
    monkeypatch.setenv(name, value)
    use_declared_connectors(monkeypatch)


def open_workspace(tmp_path: Path, source: str) -> Workspace:
    """The workspace over one ``[[source]]`` whose keys (TOML lines) ``source`` holds."""
    config = tmp_path / "headwater.toml"
    config.write_text(f"{WORKSPACE}[[source]]\n{NO_WAITS}{source}")
    return Workspace.open(config)
