"""The round trip (``roundtrip_run.round_trip``) for the code-hosting and knowledge-base connectors
on their fakes: github, gitlab, notion, zendesk and servicenow (``vendor_cases``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from roundtrip_run import round_trip
from vendor_run import vendor_case

__all__ = ["vendor_case"]


@pytest.mark.parametrize(
    "vendor_case", ["github", "gitlab", "notion", "zendesk", "servicenow"], indirect=True
)
def test_round_trip_500_items_exact_counts(vendor_case: Any, tmp_path: Path) -> None:
    """500 items, 5 % deleted, edited and re-permissioned: exact counts everywhere."""
    round_trip(vendor_case, tmp_path)
