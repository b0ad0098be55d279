"""The teams connector against the fake Graph: threads with replies, ACLs from the
channel's audience (team members, or a private/shared channel's own members), groups,
changes by delta with ``@removed`` deletes, an expired delta link starting over, a run
resumed mid-listing, an unknown membership type failing closed, a 429 storm, and
validate's messages."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from fake_api_checks import FakeApi, FakeApiChecks, ValidateStep
from teams_support import make, populate

from fakes.teams import FakeTeams
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError
from headwater.types import Checkpoint, Deleted, Failure, Window

EVERYTHING = Window(None, FAR_FUTURE)


def test_threads_with_replies_and_their_audience(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)
    docs = {
        d.object_id: d
        for d in collect(make(graph, tmp_path).read(EVERYTHING, None, no_known)).documents
    }
    assert sorted(docs) == sorted(
        [f"t1/c-gen/{ids[k]}" for k in ("hello", "plan", "lunch")]
        + [f"t1/c-priv/{ids['secret']}", f"t1/c-shared/{ids['partner']}"]
    )
    plan = docs[f"t1/c-gen/{ids['plan']}"]
    text = (plan.content or b"").decode()
    assert "The plan for Q3" in text and "Looks good" in text and "Shipping it" in text
    assert plan.metadata["replies"] == "2" and plan.media_type == "text/html"
    assert plan.access is not None and plan.access.groups == ("teams:group:t1",)
    secret = docs[f"t1/c-priv/{ids['secret']}"].access
    assert secret is not None and secret.groups == ("teams:group:channel:c-priv",)
    assert secret.users == () and not secret.public
    partner = docs[f"t1/c-shared/{ids['partner']}"].access
    assert partner is not None and partner.groups == ("teams:group:channel:c-shared",)


def test_groups_are_team_and_own_channel_members(graph: FakeTeams, tmp_path: Path) -> None:
    populate(graph)
    listed = list(make(graph, tmp_path).groups())
    assert listed == [
        ("teams:group:t1", ["ann@example.com", "bob@example.com"]),
        ("teams:group:channel:c-priv", ["ann@example.com"]),
        ("teams:group:channel:c-shared", ["ann@example.com", "eve@partner.com"]),
    ]
    assert listed[1].display_name == "Engineering / Leads"
    graph.permissions.discard("ChannelMember.Read.All")
    with pytest.raises(CredentialError, match=r"permission ChannelMember.Read.All"):
        list(make(graph, tmp_path).groups())


def test_changes_follow_delta_with_removed_deletes(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)
    first = collect(make(graph, tmp_path).read(EVERYTHING, None, no_known))
    assert first.final is not None and len(json.loads(first.final.cursor)["links"]) == 3
    graph.edit("t1", "c-gen", ids["hello"], "<p>Hello again</p>")
    graph.delete("t1", "c-gen", ids["lunch"])
    new = graph.post("t1", "c-priv", "ann", "<p>Budget</p>")
    graph.clear_log()
    again = collect(make(graph, tmp_path).read(EVERYTHING, first.final, no_known))
    assert sorted(d.object_id for d in again.documents) == sorted(
        [f"t1/c-gen/{ids['hello']}", f"t1/c-priv/{new}"]
    )
    assert Deleted(f"t1/c-gen/{ids['lunch']}") in again.items
    hello = next(d for d in again.documents if d.object_id.endswith(ids["hello"]))
    assert "Hello again" in (hello.content or b"").decode()
    assert all("$deltatoken" in c.query or not c.path.endswith("/delta") for c in graph.log)
    quiet = collect(make(graph, tmp_path).read(EVERYTHING, again.final, no_known))
    assert [i for i in quiet.items if not isinstance(i, Checkpoint)] == []


def test_recent_threads_are_re_read_for_new_replies(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)  # the fake's messages are from 2024: a window reaching back
    first = collect(make(graph, tmp_path, reply_days=36500).read(EVERYTHING, None, no_known))
    assert first.final is not None and len(json.loads(first.final.cursor)["recent"]) == 5
    graph.reply("t1", "c-gen", ids["hello"], "bob", "<p>Hi ann</p>")  # delta stays silent
    graph.delete("t1", "c-priv", ids["secret"])
    again = collect(make(graph, tmp_path, reply_days=36500).read(EVERYTHING, first.final, no_known))
    hello = next(d for d in again.documents if d.object_id == f"t1/c-gen/{ids['hello']}")
    assert "Hi ann" in (hello.content or b"").decode() and hello.metadata["replies"] == "1"
    before = next(d for d in first.documents if d.object_id == hello.object_id)
    assert hello.version != before.version
    assert [i.object_id for i in again.items if isinstance(i, Deleted)] == [
        f"t1/c-priv/{ids['secret']}"
    ]  # once: from delta, not again from the recent threads
    assert again.final is not None and len(json.loads(again.final.cursor)["recent"]) == 4
    old = collect(make(graph, tmp_path).read(EVERYTHING, None, no_known))  # 14 days
    assert old.final is not None and json.loads(old.final.cursor)["recent"] == {}


def test_an_expired_delta_link_starts_the_channel_over(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)
    first = collect(make(graph, tmp_path).read(EVERYTHING, None, no_known))
    graph.delete("t1", "c-gen", ids["lunch"])
    graph.floor = graph.seq + 1  # Graph no longer keeps the saved tokens
    graph.clear_log()
    again = collect(make(graph, tmp_path).read(EVERYTHING, first.final, no_known))
    deltas = [(c.status, "$deltatoken" in c.query) for c in graph.log if c.path.endswith("/delta")]
    assert deltas[:2] == [(410, True), (200, False)]
    assert sorted(d.object_id for d in again.documents) == sorted(
        [f"t1/c-gen/{ids[k]}" for k in ("hello", "plan")]
        + [f"t1/c-priv/{ids['secret']}", f"t1/c-shared/{ids['partner']}"]
    )
    assert not any(isinstance(i, Deleted) for i in again.items)  # enumeration prunes
    assert again.final is not None
    graph.floor = 0  # the other links are good again
    links = json.loads(again.final.cursor)["links"]
    links["t1/c-gen"] = links["t1/c-gen"].split("$deltatoken=")[0] + "$deltatoken=bogus"
    bad = collect(
        make(graph, tmp_path).read(EVERYTHING, Checkpoint(json.dumps({"links": links})), no_known)
    )
    assert len(bad.documents) == 2  # the unknown token (400) started c-gen over


def test_a_run_resumes_mid_channel(graph: FakeTeams, tmp_path: Path) -> None:
    populate(graph)
    full = collect(make(graph, tmp_path).read(EVERYTHING, None, no_known))
    mid = next(
        i for i in full.items if isinstance(i, Checkpoint) and "pending" in json.loads(i.cursor)
    )
    after = full.items[full.items.index(mid) + 1 :]
    resumed = collect(make(graph, tmp_path).read(EVERYTHING, mid, no_known))
    assert resumed.object_ids == [d.object_id for d in after if hasattr(d, "version")]
    assert resumed.object_ids and len(resumed.object_ids) < len(full.object_ids)


def test_an_unknown_membership_type_fails_closed(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)
    graph.channel("t1", "c-odd", "Odd", None, [])
    odd = graph.post("t1", "c-odd", "ann", "<p>?</p>")
    result = collect(make(graph, tmp_path).read(EVERYTHING, None, no_known))
    failed = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.object_id, f.error_class) for f in failed] == [
        (f"t1/c-odd/{odd}", "acl_unavailable")
    ]
    assert f"t1/c-gen/{ids['hello']}" in result.object_ids


def test_unreadable_replies_fail_the_thread(graph: FakeTeams, tmp_path: Path) -> None:
    ids = populate(graph)
    graph.broken.add(f"/v1.0/teams/t1/channels/c-gen/messages/{ids['plan']}/replies")
    result = collect(make(graph, tmp_path, retry_attempts=2).read(EVERYTHING, None, no_known))
    failed = [i.object_id for i in result.items if isinstance(i, Failure)]
    assert failed == [f"t1/c-gen/{ids['plan']}"] and len(result.documents) == 4


def _without(permission: str, match: str) -> ValidateStep:
    """``validate()`` refused, naming ``permission``, while the app lacks it."""
    return ValidateStep(
        CredentialError,
        match,
        change=lambda graph: graph.permissions.discard(permission),
        undo=lambda graph: graph.permissions.add(permission),
    )


class TestTeamsApi(FakeApiChecks):
    """The shared fake-API read checks (``fake_api_checks``): a 429 storm, Retry-After,
    and validate's messages naming token, permissions and team."""

    validate_steps = (
        ValidateStep(options={"teams": []}),  # every team the app sees
        ValidateStep(
            CredentialError,
            r"teams `token` was rejected by Graph \(HTTP 401",
            {"token": "nope"},
        ),
        ValidateStep(ConfigError, r"`teams` names 'nope'.*HTTP 404 NotFound", {"teams": ["nope"]}),
        _without("Channel.ReadBasic.All", r"permission Channel.ReadBasic.All"),
        *(
            _without(permission, rf"the application permission {permission};")
            for permission in (
                "TeamMember.Read.All",
                "ChannelMessage.Read.All",
                "ChannelMember.Read.All",
            )
        ),
        ValidateStep(),  # every permission back: valid again
    )

    @pytest.fixture
    def fake_api(self, graph: FakeTeams, tmp_path: Path) -> FakeApi:
        populate(graph)
        return FakeApi(graph, partial(make, graph, tmp_path), documents=5)
