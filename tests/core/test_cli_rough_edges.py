"""Rough edges of the command line found by running it for real (issue 28, items 6, 8
and 11): run id prefixes, exit codes, help text, the demo's command lines, packaging."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_is_an_spdx_string_setuptools_does_not_warn_about() -> None:
    """`license = { text = ... }` made setuptools warn on every install (a TOML table
    is deprecated); the SPDX string needs setuptools 77 or later."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in pyproject["build-system"]["requires"]


def test_the_readme_says_how_to_reach_the_installed_command() -> None:
    use = (ROOT / "README.md").read_text(encoding="utf-8").split("## Use", 1)[1]
    opening = use.split("```", 1)[0]
    assert "source .venv/bin/activate" in opening
    assert ".venv/bin/headwater" in opening
