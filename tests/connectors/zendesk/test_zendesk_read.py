"""The zendesk connector against the fake API: segment ACLs, segments resolved to people,
drafts, locales, overlapping export pages, a stalled export, a 429 storm, an ACL that
cannot be read, and validate's messages."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from fake_api_checks import FakeApi, FakeApiChecks, ValidateStep
from zendesk_support import T0, make, populate

from fakes.zendesk import Article, FakeZendesk
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError
from headwater.types import Deleted, Failure, Window

EVERYTHING = Window(None, FAR_FUTURE)


def test_acl_from_user_segments(zd: FakeZendesk, tmp_path: Path) -> None:
    populate(zd)
    result = collect(make(zd, tmp_path).read(EVERYTHING, None, no_known))
    docs = {d.object_id: d for d in result.documents}
    assert list(docs) == ["articles/101", "articles/102", "articles/103", "articles/104"]
    access = {oid: d.access for oid, d in docs.items()}
    assert access["articles/101"] is not None and access["articles/101"].public
    assert access["articles/102"] is not None
    assert access["articles/102"].groups == ("zd:group:segment:2",)
    assert access["articles/103"] is not None
    assert access["articles/103"].groups == ("zd:group:segment:1", "zd:group:segment:3")
    content = docs["articles/102"].content
    assert content is not None and b"<h1>VIP line</h1><p>Call 555.</p>" in content
    assert result.final is not None
    assert json.loads(result.final.cursor) == {"start_time": int(T0.timestamp()) + 240}


def test_segments_resolve_to_people(zd: FakeZendesk, tmp_path: Path) -> None:
    populate(zd)
    listed = {g.principal: g for g in make(zd, tmp_path).groups()}
    assert list(listed["zd:group:segment:1"].members) == ["ann@example.com"]
    # vip at organization 900: bob (cat is at 901, dan is suspended); eve added by hand
    assert list(listed["zd:group:segment:2"].members) == ["bob@example.com", "eve@example.com"]
    assert list(listed["zd:group:segment:3"].members) == ["ann@example.com"]
    assert listed["zd:group:segment:2"].display_name == "VIP at Acme"
    zd.segments[2]["or_tags"] = ["beta", "gamma"]
    zd.segments[2]["organization_ids"] = []
    listed = {g.principal: g for g in make(zd, tmp_path).groups()}
    assert list(listed["zd:group:segment:2"].members) == ["bob@example.com", "eve@example.com"]
    zd.segments[2]["or_tags"] = ["gamma"]
    listed = {g.principal: g for g in make(zd, tmp_path).groups()}
    assert list(listed["zd:group:segment:2"].members) == ["eve@example.com"]


def test_incremental_drafts_and_locales(zd: FakeZendesk, tmp_path: Path) -> None:
    populate(zd)
    first = collect(make(zd, tmp_path, locales=["en-us"]).read(EVERYTHING, None, no_known))
    assert "articles/104" not in first.object_ids
    zd.articles[102].draft = True  # unpublished
    zd.articles[102].updated = T0.replace(minute=9)
    zd.articles[105] = Article(105, "New", "<p>Hi</p>", T0.replace(minute=10))
    again = collect(make(zd, tmp_path, locales=["en-us"]).read(EVERYTHING, first.final, no_known))
    # the export starts at the last end_time (inclusive): the German article is its edge
    assert again.object_ids == ["articles/102", "articles/105"]
    assert Deleted("articles/102") in again.items
    ids = set(make(zd, tmp_path, locales=["en-us"]).enumerate())
    assert ids == {"articles/101", "articles/103", "articles/105"}
    zd.articles[103].archived = True
    assert "articles/103" not in set(make(zd, tmp_path).enumerate())


def test_pages_overlapping_at_the_edge_give_each_article_once(
    zd: FakeZendesk, tmp_path: Path
) -> None:
    populate(zd)
    zd.articles[104].updated = zd.articles[103].updated  # the same second
    zd.page_limit = 3
    result = collect(make(zd, tmp_path).read(EVERYTHING, None, no_known))
    assert result.object_ids == ["articles/101", "articles/102", "articles/103", "articles/104"]


def test_a_stalled_export_raises_and_names_the_second(zd: FakeZendesk, tmp_path: Path) -> None:
    populate(zd)
    for article in zd.articles.values():
        article.updated = T0
    with pytest.raises(ConfigError, match=r"more than a page of articles changed within"):
        collect(make(zd, tmp_path).read(EVERYTHING, None, no_known))


def test_an_unreadable_segment_fails_its_article_closed(zd: FakeZendesk, tmp_path: Path) -> None:
    populate(zd)
    zd.broken.add("/api/v2/help_center/user_segments/2")
    result = collect(make(zd, tmp_path, retry_attempts=2).read(EVERYTHING, None, no_known))
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.object_id, f.error_class) for f in failures] == [("articles/102", "acl_unavailable")]
    assert "articles/102" not in {d.object_id for d in result.documents}
    assert len(result.documents) == 3


class TestZendeskApi(FakeApiChecks):
    """The shared fake-API read checks (``fake_api_checks``): a 429 storm, Retry-After,
    and validate's messages naming credentials, role and Help Center."""

    storm = 9
    validate_steps = (
        ValidateStep(
            CredentialError, r"401 \(Couldn't authenticate you\).*`email`", {"token": "nope"}
        ),
        ValidateStep(
            CredentialError,
            r"signs in as 'end-user'; expected an agent",
            change=lambda zd: setattr(zd, "role", "end-user"),
            undo=lambda zd: setattr(zd, "role", "admin"),
        ),
        ValidateStep(
            ConfigError,
            r"no Help Center answers there",
            change=lambda zd: setattr(zd, "help_center", False),
        ),
    )

    @pytest.fixture
    def fake_api(self, zd: FakeZendesk, tmp_path: Path) -> FakeApi:
        populate(zd)
        return FakeApi(zd, partial(make, zd, tmp_path), documents=4)
