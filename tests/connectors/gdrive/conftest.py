"""Fixtures for the gdrive connector: a fake Drive API (tests/fakes/gdrive) per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.gdrive import FakeDrive


@pytest.fixture
def drive() -> Iterator[FakeDrive]:
    with FakeDrive() as fake:
        fake.drives["sd1"] = "Team"
        fake.put("a", "a.txt", "Alpha text in My Drive.\n")
        fake.put("b", "Plan", "Doc exported as plain text.\n",
                 mime="application/vnd.google-apps.document")  # fmt: skip
        fake.put("c", "Budget", "q1,q2\n1,2\n", mime="application/vnd.google-apps.spreadsheet")
        fake.put("d", "team.md", "# Team\n\nShared drive file.\n", drive_id="sd1")
        fake.put("e", "photo.png", b"\x89PNG\r\n", mime="image/png")  # skipped: no parser
        fake.put("f", "folder", b"", mime="application/vnd.google-apps.folder")
        yield fake
