"""Lease takeovers: counted only when the previous holder never released its lease.

A claim after a release is routine; a claim of a lease that expired unrenewed (or whose
process is gone) is a takeover: counted per source in the lease row, logged at INFO
(``-v``) and exported as ``headwater_lease_takeovers_total{source=...}`` in /metrics.
Both manifest engines.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from headwater import Workspace
from headwater.api.metrics import Metrics
from headwater.api.service import Service
from headwater.manifest.leases import LeaseLedger
from headwater.manifest.store import Manifest
from workspace_helpers import filesystem_source, write_config


def test_only_an_unreleased_lease_counts_as_a_takeover(
    manifest_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = Manifest.open(manifest_url)
    ledger = LeaseLedger(manifest.engine)
    try:
        caplog.set_level(logging.INFO, logger="headwater.manifest.leases")
        first = ledger.acquire("docs", "host-a:1", 60)
        ledger.release(first)
        ledger.acquire("docs", "host-b:2", 60)  # after a release: a normal claim
        assert ledger.takeovers() == {"docs": 0}
        assert not [r for r in caplog.records if "taken over" in r.getMessage()]

        ledger.acquire("docs", "host-b:2", 60)  # its own lease again: not a takeover
        assert ledger.takeovers() == {"docs": 0}

        ledger.acquire("wiki", "host-b:2", 0)  # expires at once, never released
        ledger.acquire("wiki", "host-c:3", 60)
        assert ledger.takeovers() == {"docs": 0, "wiki": 1}
        (line,) = [r.getMessage() for r in caplog.records if "taken over" in r.getMessage()]
        assert "wiki" in line and "host-b:2" in line and "expired" in line

        released = ledger.acquire("wiki", "host-c:3", 60)
        ledger.release(released)
        ledger.acquire("wiki", "host-d:4", 0)  # after a release again: not counted
        ledger.acquire("wiki", "host-a:1", 60)  # host-d let it expire: counted
        assert ledger.takeovers()["wiki"] == 2
    finally:
        manifest.close()


def test_takeovers_are_exported_per_source_in_metrics(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    sources = filesystem_source(root, "docs") + filesystem_source(root, "wiki")
    config = write_config(tmp_path, manifest_url=None, sources=sources)
    with Workspace.open(config) as ws:
        ledger = ws.manifest.runs.leases
        ledger.acquire("wiki", "gone-host:1", 0)
        ledger.acquire("wiki", "other-host:2", 60)
        text = Metrics(Service(ws)).render().decode()
    samples = {
        s.labels["source"]: s.value
        for family in text_string_to_metric_families(text)
        if family.name == "headwater_lease_takeovers"
        for s in family.samples
        if s.name == "headwater_lease_takeovers_total"
    }
    assert samples == {"docs": 0.0, "wiki": 1.0}
