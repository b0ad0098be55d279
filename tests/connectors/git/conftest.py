"""Fixtures for the git connector: a real repository made with the git CLI in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_support import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "source")
    repo.write("README.md", "# Handbook\n")
    repo.write("guides/setup.md", "Install it.\n")
    repo.write("guides/usage.txt", "Use it.\n")
    repo.write("zz/notes.md", "Notes.\n")
    repo.commit("first")
    return repo
