"""The round trip (``roundtrip_run``) for the SaaS connectors on their fakes (jira,
dropbox, sharepoint) and the cloud stores on their emulators (azure_blob on Azurite, gcs
on fake-gcs-server: processes, so the module is in the process tier)."""

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
    "case", ["jira", "dropbox", "azure_blob", "sharepoint", "gcs"], indirect=True
)
def test_round_trip_500_items_exact_counts(case: Any, tmp_path: Path) -> None:
    """500 items, 5 % deleted, edited and re-permissioned: exact counts everywhere."""
    round_trip(case, tmp_path)
