"""Round-trip cases for the code-hosting and knowledge-base SaaS connectors on their
fakes (``tests/fakes/<name>``, written from the vendors' documentation): github, gitlab,
notion, zendesk and servicenow. Each fills its fake in-process with the N items of
``roundtrip_run`` and deletes, edits and (where an item carries its own ACL) re-permissions
5 % of them the way the vendor would show it.

A case knows only its source; ``roundtrip_run.round_trip`` owns the shape (sync, mutate,
re-sync, exact counts). ``reader`` is who may read every item before the ACL step.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from httpserver import LocalHttpServer, Reply
from saas_cases import NEW_READER, OLD_READER, STAFF, N, body_of, text_of

from fakes.github import FakeGithub
from fakes.gitlab import FakeGitlab
from fakes.notion import FakeNotion, Page, paragraph
from fakes.servicenow import FakeServicenow
from fakes.zendesk import Article, FakeZendesk

REPO = "acme/docs"
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)  # when the SaaS items were written


@dataclass
class GithubCase:
    """N issues in one private repository whose one collaborator is the reader (an
    issue's ACL is its repository's, so there is no per-object ACL to change); a deleted
    issue leaves the listing and ``enumerate()``, an edit moves ``updated_at``."""

    gh: FakeGithub
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"user": "github:kim"})

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "github"\nbase_url = "{self.gh.url}"\n'
            f'token = "{self.gh.token}"\nrepos = ["{REPO}"]\npage_size = 100\n'
            "include_pull_requests = false\nretry_initial_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"{REPO}/issues/{i + 1}"

    def load(self) -> None:
        self.gh.users["kim"] = OLD_READER
        self.gh.add_repo(REPO, private=True, collaborators=["kim"])
        for i in range(N):
            assert self.gh.add(REPO, f"Item {i}", body_of(i)) == i + 1

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        items = self.gh.repos[REPO]["items"]
        for i in deleted:
            del items[i + 1]
        for i in edited:
            self.gh.touch(REPO, i + 1, body=body_of(i, True))


@dataclass
class GitlabCase:
    """N Markdown files in one commit of a private project whose one Reporter is the
    reader (a file's ACL is its project's); the changes are a second commit, read through
    the compare of the two (``deleted_file`` for the deletes)."""

    gl: FakeGitlab
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"user": "gitlab:kim"})

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "gitlab"\nbase_url = "{self.gl.url}"\n'
            f'token = "{self.gl.token}"\nprojects = ["{REPO}"]\npage_size = 100\n'
            "include_issues = false\ninclude_merge_requests = false\n"
            "retry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"{REPO}/-/blob/items/{i:04d}.md"

    def load(self) -> None:
        self.gl.add_user(1, "kim", OLD_READER)
        self.gl.add_project(REPO, members={1: 20})
        self.gl.commit(REPO, {f"items/{i:04d}.md": text_of(i).encode() for i in range(N)})

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        changes: dict[str, bytes | None] = {f"items/{i:04d}.md": None for i in deleted}
        changes |= {f"items/{i:04d}.md": text_of(i, True).encode() for i in edited}
        self.gl.commit(REPO, changes)


@dataclass
class NotionCase:
    """N workspace pages shared with the integration, written at ``T0``; the ACL is the
    source's ``access`` (the API shows no page permissions). A deleted page leaves the
    search listing and ``enumerate()``; an edit replaces its blocks and moves
    ``last_edited_time`` (kept to the minute, so the edit is dated now, not at ``T0``)."""

    notion: FakeNotion
    per_object_acl: bool = False
    ids: dict[int, str] = field(default_factory=dict)

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "notion"\nbase_url = "{self.notion.url}"\n'
            f'token = "{self.notion.token}"\npage_size = 100\nretry_initial_wait = 0.0\n'
            f'retry_max_wait = 0.0\naccess = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return f"page/{self.ids[i]}"

    def load(self) -> None:
        for i in range(N):
            page = self.notion.add(Page(f"Item {i}", [paragraph(body_of(i))], T0))
            self.ids[i] = page.id

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            del self.notion.pages[self.ids[i]]
        for i in edited:
            page = self.notion.pages[self.ids[i]]
            page.blocks, page.edited = [paragraph(body_of(i, True))], datetime.now(UTC)


def html_body(i: int, edited: bool = False) -> str:
    """``body_of`` as the HTML paragraph a knowledge base stores."""
    return f"<p>{html.escape(body_of(i, edited))}</p>"


@dataclass
class ZendeskCase:
    """N Help Center articles, each restricted to a user segment: segment 1 holds the
    reader (an agent of group 500), segment 2 ``NEW_READER`` (group 501). The ACL step
    moves 5 % of the articles to segment 2; edits and segment changes move ``updated_at``
    in the incremental export, and a deleted article leaves the article list. The edits
    and segment changes share one second: N // 10 of them, at most a page up to N = 10,000."""

    zd: FakeZendesk
    per_object_acl: bool = True
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "zendesk"\nbase_url = "{self.zd.url}"\n'
            f'email = "{self.zd.user}"\ntoken = "{self.zd.token}"\n'
            "retry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"articles/{1000 + i}"

    def load(self) -> None:
        self.zd.users = [
            {"id": 10, "email": OLD_READER, "role": "agent", "active": True, "tags": []},
            {"id": 11, "email": NEW_READER, "role": "agent", "active": True, "tags": []},
        ]
        self.zd.group_memberships = [(10, 500), (11, 501)]
        for sid, group in ((1, 500), (2, 501)):
            segment = {"id": sid, "name": f"Group {group}", "user_type": "staff"}
            self.zd.segments[sid] = segment | {"group_ids": [group]}
        # A second apart: the time-based export pages by ``updated_at`` and cannot page
        # past more than a page (1,000) of articles changed in one second (the connector
        # then stops and says so), which an N over 1,000 written at T0 would be.
        for i in range(N):
            written = T0 + timedelta(seconds=i)
            self.zd.articles[1000 + i] = Article(
                1000 + i, f"Item {i}", html_body(i), written, segments=[1]
            )

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        now = datetime.now(UTC)
        for i in deleted:
            del self.zd.articles[1000 + i]
        for i in edited:
            article = self.zd.articles[1000 + i]
            article.body, article.updated = html_body(i, True), now
        for i in regranted:
            article = self.zd.articles[1000 + i]
            article.segments, article.updated = [2], now


def sn_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class ServicenowCase:
    """N published articles of one knowledge base, each readable under the user
    criteria naming the reader; the ACL step points 5 % at criteria naming ``NEW_READER``
    (the row's ``sys_updated_on`` moves, as any update of the record moves it); a deleted
    article leaves the listing and ``enumerate()``."""

    sn: FakeServicenow
    per_object_acl: bool = True
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "servicenow"\nbase_url = "{self.sn.url}"\n'
            f'user = "{self.sn.user}"\npassword = "{self.sn.token}"\n'
            'knowledge_bases = ["kb1"]\npage_size = 500\n'
            "retry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"kb_knowledge/a{i:04d}"

    def row(self, i: int, edited: bool = False) -> dict[str, Any]:
        return {
            "sys_id": f"a{i:04d}",
            "number": f"KB{i:07d}",
            "short_description": f"Item {i}",
            "text": html_body(i, edited),
            "kb_knowledge_base": "kb1",
            "workflow_state": "published",
            "sys_updated_on": sn_time(T0),
            "can_read_user_criteria": "uc_kim",
            "cannot_read_user_criteria": "",
        }

    def load(self) -> None:
        self.sn.tables = {
            "kb_knowledge_base": [{"sys_id": "kb1", "title": "IT"}],
            "kb_uc_can_read_mtom": [],
            "kb_uc_cannot_read_mtom": [],
            "user_criteria": [
                {"sys_id": "uc_kim", "name": "Kim", "user": "u_kim"},
                {"sys_id": "uc_ann", "name": "Ann", "user": "u_ann"},
            ],
            "sys_user": [
                {"sys_id": "u_kim", "email": OLD_READER, "active": "true"},
                {"sys_id": "u_ann", "email": NEW_READER, "active": "true"},
            ],
            "sys_user_grmember": [],
            "sys_user_has_role": [],
            "kb_knowledge": [self.row(i) for i in range(N)],
        }

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        now = sn_time(datetime.now(UTC))
        rows = {r["sys_id"]: r for r in self.sn.tables["kb_knowledge"]}
        for i in deleted:
            del rows[f"a{i:04d}"]
        for i in edited:
            rows[f"a{i:04d}"] |= {"text": html_body(i, True), "sys_updated_on": now}
        for i in regranted:
            rows[f"a{i:04d}"] |= {"can_read_user_criteria": "uc_ann", "sys_updated_on": now}
        self.sn.tables["kb_knowledge"] = list(rows.values())


@dataclass
class RssCase:
    """One RSS 2.0 feed of N entries on the local HTTP server, dated a minute apart
    from ``T0``. A feed shows only its latest entries, so an entry that leaves it has not
    been deleted: the connector has no ``enumerate()`` and never deletes (docs/connectors/
    rss.md). ``feed_round_trip`` asserts exactly that: 5 % of the entries leave the feed
    and stay, 5 % are edited with a new date and arrive."""

    server: LocalHttpServer
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"groups": [STAFF]})
    entries: dict[int, tuple[str, datetime]] = field(default_factory=dict)

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "rss"\nurl = "{self.server.url("/feed.xml")}"\n'
            'user_agent = "HeadwaterTest/1.0"\nrequests_per_second = 1000.0\n'
            f'max_attempts = 1\naccess = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return f"item-{i:04d}"

    def publish(self) -> None:
        items = "".join(
            f"<item><guid isPermaLink='false'>{self.object_id(i)}</guid><title>Item {i}</title>"
            f"<pubDate>{format_datetime(when, usegmt=True)}</pubDate>"
            f"<description>{html.escape(text)}</description></item>"
            for i, (text, when) in sorted(self.entries.items())
        )
        feed = (
            '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
            f"<title>Items</title><link>{self.server.url()}</link>"
            f"<description>Items</description>{items}</channel></rss>"
        )
        self.server.route("/feed.xml", Reply(feed.encode(), content_type="application/rss+xml"))

    def load(self) -> None:
        for i in range(N):
            self.entries[i] = (body_of(i), T0 + timedelta(minutes=i))
        self.publish()

    def mutate(self, dropped: list[int], edited: list[int]) -> None:
        now = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
        for i in dropped:
            del self.entries[i]
        for i in edited:
            self.entries[i] = (body_of(i, True), now)
        self.publish()
