"""The shipped conformance suite against the fake Drive API."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from fakes.gdrive import TOKEN, FakeDrive
from headwater.connectors.base import SourceContext
from headwater.connectors.gdrive import GdriveConnector, GdriveOptions
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


def make(base_url: str, tmp_path: Path, token: str = TOKEN, **extra: object) -> GdriveConnector:
    options = GdriveOptions.model_validate(
        {"token": SecretStr(token), "base_url": base_url, "page_size": 2,
         "retry_attempts": 2, "retry_initial_wait": 0.01, **extra}
    )  # fmt: skip
    return GdriveConnector(options, SourceContext(source_id="gd", state_dir=tmp_path))


class TestGdriveConformance(ConnectorConformance, connector=GdriveConnector):
    @pytest.fixture
    def harness(self, drive: FakeDrive, tmp_path: Path) -> ConnectorHarness:
        return ConnectorHarness(
            make=lambda: make(drive.url, tmp_path),
            make_broken=lambda: make(drive.url, tmp_path, token="expired"),
            make_failing_listing=lambda: make(drive.url + "/broken", tmp_path),
        )


class TestGdriveSharedDrivesConformance(ConnectorConformance, connector=GdriveConnector):
    """Two scopes (My Drive is not one of them): checkpoints between scopes resume too."""

    @pytest.fixture
    def harness(self, drive: FakeDrive, tmp_path: Path) -> ConnectorHarness:
        drive.drives["sd2"] = "Other"
        for name in ("x", "y", "z"):
            drive.put(name, f"{name}.txt", f"{name} in sd2\n", drive_id="sd2")
        scoped = {"shared_drives": ["sd1", "sd2"]}
        return ConnectorHarness(
            make=lambda: make(drive.url, tmp_path, **scoped),
            make_broken=lambda: make(drive.url, tmp_path, shared_drives=["nope"]),
            make_failing_listing=lambda: make(drive.url + "/broken", tmp_path, **scoped),
        )
