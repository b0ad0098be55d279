"""Fixtures for the sharepoint connector: a fake Microsoft Graph (tests/fakes/sharepoint)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.sharepoint import FakeGraph


@pytest.fixture
def graph() -> Iterator[FakeGraph]:
    with FakeGraph() as fake:
        fake.put("lib1", "i1", "a.txt", "Alpha in Documents.\n")
        fake.put("lib1", "i2", "b.md", "# Beta\n\nIn Documents.\n")
        fake.put("lib1", "i3", "c.txt", "Gamma in Documents.\n")
        fake.put("lib2", "j1", "policy.txt", "Policy text.\n")
        fake.put("lib2", "j2", "image.png", "not parsed")  # skipped: no parser for .png
        yield fake
