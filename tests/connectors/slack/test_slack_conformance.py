"""The shipped conformance suite against the fake Slack Web API."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from fakes.slack import TOKEN, FakeSlack
from headwater.connectors.base import SourceContext
from headwater.connectors.slack import SlackConnector, SlackOptions
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


def make(base_url: str, tmp_path: Path, token: str = TOKEN, **extra: object) -> SlackConnector:
    options = SlackOptions.model_validate(
        {"token": SecretStr(token), "base_url": base_url + "/api", "page_size": 2,
         "retry_attempts": 2, "retry_initial_wait": 0.01, **extra}
    )  # fmt: skip
    return SlackConnector(options, SourceContext(source_id="sl", state_dir=tmp_path))


class TestSlackConformance(ConnectorConformance, connector=SlackConnector):
    @pytest.fixture
    def harness(self, slack: FakeSlack, tmp_path: Path) -> ConnectorHarness:
        def failing() -> SlackConnector:
            slack.broken = True  # every later history page answers 500 from now on
            return make(slack.url, tmp_path)

        return ConnectorHarness(
            make=lambda: make(slack.url, tmp_path),
            make_broken=lambda: make(slack.url, tmp_path, token="xoxb-revoked"),
            make_failing_listing=failing,
        )
