"""The round trip for the code-hosting and knowledge-base connectors on their fakes
(``vendor_cases``): github, gitlab, notion, zendesk and servicenow through
``roundtrip_run.round_trip``; rss, whose entries are never deleted, through
``vendor_run.feed_round_trip``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from roundtrip_run import round_trip
from vendor_run import feed_round_trip, vendor_case

__all__ = ["vendor_case"]


@pytest.mark.parametrize(
    "vendor_case", ["github", "gitlab", "notion", "zendesk", "servicenow"], indirect=True
)
def test_round_trip_500_items_exact_counts(vendor_case: Any, tmp_path: Path) -> None:
    """500 items, 5 % deleted, edited and re-permissioned: exact counts everywhere."""
    round_trip(vendor_case, tmp_path)


@pytest.mark.parametrize("vendor_case", ["rss"], indirect=True)
def test_feed_round_trip_500_entries_nothing_deleted(vendor_case: Any, tmp_path: Path) -> None:
    """500 entries, 5 % leave the feed (kept: not a delete), 5 % edited: exact counts."""
    feed_round_trip(vendor_case, tmp_path)
