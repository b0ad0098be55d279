"""validate() names what is wrong (token, scope, channel, address); groups() lists the
workspace's members under the ``{source_id}:workspace`` principal."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_slack_conformance import make

from fakes.slack import FakeSlack
from headwater.connectors.slack import principal_for_group
from headwater.connectors.testing import FAR_FUTURE, no_known
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.types import Window


def test_a_rejected_token_names_the_token_option(slack: FakeSlack, tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match=r"slack `token` was rejected by auth\.test"):
        make(slack.url, tmp_path, token="xoxb-nope").validate()


@pytest.mark.parametrize("scope", ["channels:read", "channels:history"])
def test_a_missing_scope_is_named(slack: FakeSlack, tmp_path: Path, scope: str) -> None:
    slack.missing.add(scope)
    with pytest.raises(CredentialError, match=rf"lacks the scope {scope} .*add {scope}"):
        make(slack.url, tmp_path).validate()


def test_a_token_without_users_read_email_is_named(slack: FakeSlack, tmp_path: Path) -> None:
    slack.missing.add("users:read.email")  # users.info answers, without profile.email
    with pytest.raises(CredentialError, match=r"lacks the scope users:read\.email"):
        make(slack.url, tmp_path).validate()
    make(slack.url, tmp_path, include_private=False).validate()  # public channels need none


def test_an_unknown_channel_is_named(slack: FakeSlack, tmp_path: Path) -> None:
    make(slack.url, tmp_path, channels=["#general", "C2"]).validate()
    with pytest.raises(ConfigError, match=r"`channels` names 'random'.*\['general', 'secret'\]"):
        make(slack.url, tmp_path, channels=["random"]).validate()


def test_a_channel_the_app_cannot_read_is_named(slack: FakeSlack, tmp_path: Path) -> None:
    connector = make(slack.url, tmp_path)
    connector.validate()
    del slack.channels["C1"]  # listed a moment ago, gone now: channel_not_found
    with pytest.raises(ConfigError, match=r"slack channel 'C1' cannot be read"):
        list(connector.read(Window(None, FAR_FUTURE), None, no_known))


def test_a_rate_limited_answer_is_transient(slack: FakeSlack, tmp_path: Path) -> None:
    slack.fail("/api/auth.test", 429, {"ok": False, "error": "ratelimited"}, Retry_After="0")
    with pytest.raises(TransientError, match=r"slack `base_url` .*HTTP 429"):
        make(slack.url, tmp_path).validate()


def test_an_unreachable_api_is_transient(tmp_path: Path) -> None:
    with pytest.raises(TransientError, match=r"slack `base_url` http://127\.0\.0\.1:9"):
        make("http://127.0.0.1:9", tmp_path).validate()


def test_groups_lists_human_members_under_the_workspace_principal(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.user("U4", "Gone@acme.com", deleted=True)
    assert list(make(slack.url, tmp_path).groups()) == [
        (
            "sl:workspace",
            ["ann@acme.com", "bob@acme.com", "cy@acme.com", "slack:U1", "slack:U2", "slack:U3"],
        ),
    ]
    assert principal_for_group("sl", "workspace") == "sl:workspace"  # kept as written
