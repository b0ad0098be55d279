"""Helpers for tests that build workspaces: config files and source tables."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_config(
    directory: Path,
    *,
    manifest_url: str | None,
    sources: str,
    indexes: str = '[[index]]\nname = "main"\ntype = "sqlite"\n',
    embedder: str = '[embedder]\ntype = "fake"\ndimension = 32\n',
    extra: str = "",
) -> Path:
    manifest = f'[manifest]\nurl = "{manifest_url}"\n' if manifest_url else ""
    config = directory / "headwater.toml"
    config.write_text(
        textwrap.dedent(
            """\
            [workspace]
            tenant = "acme"
            state_dir = "state"
            """
        )
        + manifest
        + embedder
        + indexes
        + extra
        + sources,
        encoding="utf-8",
    )
    return config


def filesystem_source(
    root: Path, source_id: str = "docs", access: str = '{ groups = ["staff"] }', extra: str = ""
) -> str:
    return (
        f'[[source]]\nid = "{source_id}"\ntype = "filesystem"\nroot = "{root}"\n'
        f"access = {access}\n{extra}\n"
    )
