"""The round trip (``roundtrip_run``) for the connectors on local servers and fakes:
filesystem, sql on PostgreSQL and MariaDB, s3 (moto), git, web, webdav, push, gdrive
and confluence. A subprocess (WsgiDAV) runs here, so the module is in the process tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from roundtrip_run import (  # the fixtures the cases ask for, and the round trip
    azurite_server,
    case,
    dav_server,
    gcs_server,
    round_trip,
    s3_server,
)

__all__ = ["azurite_server", "case", "dav_server", "gcs_server", "s3_server"]


@pytest.mark.parametrize(
    "case",
    [
        "filesystem",
        "postgresql",
        "mariadb",
        "s3",
        "git",
        "web",
        "webdav",
        "push",
        "gdrive",
        "confluence",
    ],
    indirect=True,
)
def test_round_trip_500_items_exact_counts(case: Any, tmp_path: Path) -> None:
    """500 items, 5 % deleted, edited and re-permissioned: exact counts everywhere."""
    round_trip(case, tmp_path)
