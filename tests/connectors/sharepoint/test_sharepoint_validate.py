"""validate() names what is wrong (token, permission, site, library); groups() lists
group members under the source's group principals."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sharepoint_conformance import make

from fakes.sharepoint import FakeGraph
from headwater.connectors.sharepoint import principal_for_group
from headwater.errors import ConfigError, CredentialError, TransientError


def test_a_rejected_token_names_the_token_option(graph: FakeGraph, tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match=r"sharepoint `token` was rejected .*HTTP 401"):
        make(graph.url, tmp_path, token="nope").validate()


def test_a_missing_permission_is_named(graph: FakeGraph, tmp_path: Path) -> None:
    graph.denied = True
    with pytest.raises(CredentialError, match=r"application permission Sites\.Read\.All"):
        make(graph.url, tmp_path).validate()


def test_an_unknown_site_is_named(graph: FakeGraph, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"`site` 'contoso.sharepoint.com:/sites/nope' was not"):
        make(graph.url, tmp_path, site="contoso.sharepoint.com:/sites/nope").validate()


def test_an_unknown_library_is_named(graph: FakeGraph, tmp_path: Path) -> None:
    make(graph.url, tmp_path, libraries=["Policies"]).validate()
    with pytest.raises(ConfigError, match=r"`libraries` names 'Wiki'.*'Documents', 'Policies'"):
        make(graph.url, tmp_path, libraries=["Wiki"]).validate()


def test_an_unreachable_api_is_transient(tmp_path: Path) -> None:
    with pytest.raises(TransientError, match=r"sharepoint `base_url` http://127\.0\.0\.1:9"):
        make("http://127.0.0.1:9", tmp_path).validate()


def test_groups_lists_members_under_the_group_principal(graph: FakeGraph, tmp_path: Path) -> None:
    graph.groups["g1"] = ("Eng@contoso.com", ["Bob@contoso.com", "ann@contoso.com"])
    graph.groups["g2"] = ("", ["cy@contoso.com"])
    # Named by object id, never by mail; emails as Graph writes them (the ledger folds case).
    assert list(make(graph.url, tmp_path).groups()) == [
        ("sp:group:g1", ["Bob@contoso.com", "ann@contoso.com"]),
        ("sp:group:g2", ["cy@contoso.com"]),
    ]
    assert principal_for_group("sp", "g2") == "sp:group:g2"
    # Display name and mail travel as labels only (issue 23 item 14).
    graph.nested["g1"] = ["g2"]  # g2 is a member of g1: a subgroup, never a user by its mail
    graph.groups["g2"] = ("ops@contoso.com", ["cy@contoso.com"])
    listed = {g.principal: g for g in make(graph.url, tmp_path).groups()}
    assert listed["sp:group:g1"].subgroups == ("sp:group:g2",)
    assert listed["sp:group:g1"].members == ["Bob@contoso.com", "ann@contoso.com"]
    graph.nested.clear()
    graph.groups["g2"] = ("", ["cy@contoso.com"])
    labels = [(g.display_name, g.mail) for g in make(graph.url, tmp_path).groups()]
    assert labels == [("g1", "Eng@contoso.com"), ("g2", None)]
