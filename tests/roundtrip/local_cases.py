"""Round-trip cases for the connectors with a local server or files (issue 29, goal 3):
a folder, the real PostgreSQL and MariaDB, moto, git, the local HTTP server, WsgiDAV,
the push API and the fake Drive and Confluence; each fills its source with the N items
of ``test_roundtrip`` and deletes, edits and re-permissions 5 % of them. The shape of the
test (sync, mutate, re-sync, exact counts) lives in ``test_roundtrip``.
"""

from __future__ import annotations

import html
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as sa
from git_support import GitRepo
from httpserver import LocalHttpServer, Reply
from s3_support import S3Server
from saas_cases import NEW_READER, OLD_READER, STAFF, N, text_of
from sql_support import ENGINE_URLS, URLS
from sqlalchemy.pool import NullPool
from web_site import urlset
from webdav_support import PASSWORD as DAV_PASSWORD
from webdav_support import USER as DAV_USER
from webdav_support import DavServer

from fakes.confluence import FakeConfluence
from fakes.gdrive import TOKEN as DRIVE_TOKEN
from fakes.gdrive import FakeDrive
from headwater import Workspace
from headwater.sync.push import PushOp, PushResult
from headwater.types import Access, SourceDocument


class Case(Protocol):
    """One connector under test: its items live in a real server or fake."""

    per_object_acl: bool

    def source(self) -> str: ...  # the [[source]] table, id "src"

    def load(self) -> None: ...

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None: ...


@dataclass
class FilesystemCase:
    root: Path
    per_object_acl: bool = False

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "filesystem"\nroot = "{self.root}"\n'
            f'access = {{ groups = ["{STAFF}"] }}\n'
        )

    def load(self) -> None:
        self.root.mkdir(parents=True)
        for i in range(N):
            (self.root / f"item-{i:04d}.md").write_text(text_of(i), encoding="utf-8")

    def object_id(self, i: int) -> str:
        return f"item-{i:04d}.md"

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            (self.root / self.object_id(i)).unlink()
        for i in edited:
            (self.root / self.object_id(i)).write_text(text_of(i, True), encoding="utf-8")


@dataclass
class SqlCase:
    kind: str
    table: str = field(default_factory=lambda: f"hw_roundtrip_{uuid.uuid4().hex[:10]}")
    per_object_acl: bool = True

    def __post_init__(self) -> None:
        self.engine = sa.create_engine(ENGINE_URLS[self.kind], poolclass=NullPool)
        meta = sa.MetaData()
        self.rows = sa.Table(
            self.table,
            meta,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("body", sa.Text),
            sa.Column("readers", sa.Text),
        )
        meta.create_all(self.engine)

    def close(self) -> None:
        self.rows.drop(self.engine, checkfirst=True)
        self.engine.dispose()

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "sql"\nurl = "{URLS[self.kind]}"\n'
            f'table = "{self.table}"\nid_columns = ["id"]\ncontent_template = "{{body}}"\n'
            'media_type = "text/markdown"\naccess_column = "readers"\n'
        )

    def object_id(self, i: int) -> str:
        return str(i)

    def load(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                self.rows.insert(),
                [{"id": i, "body": text_of(i), "readers": f"group:{STAFF}"} for i in range(N)],
            )

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        r = self.rows
        with self.engine.begin() as conn:
            conn.execute(r.delete().where(r.c.id.in_(deleted)))
            for i in edited:
                conn.execute(r.update().where(r.c.id == i).values(body=text_of(i, True)))
            conn.execute(
                r.update().where(r.c.id.in_(regranted)).values(readers=f"user:{NEW_READER}")
            )


@dataclass
class S3Case:
    server: S3Server
    bucket: str = field(default_factory=lambda: f"hw-rt-{uuid.uuid4().hex[:12]}")
    per_object_acl: bool = False

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "s3"\nbucket = "{self.bucket}"\n'
            f'endpoint_url = "{self.server.endpoint}"\nregion = "us-east-1"\n'
            'access_key_id = "test"\nsecret_access_key = "test"\n'
            f'access = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return f"items/{i:04d}.md"

    def load(self) -> None:
        client = self.server.client()
        client.create_bucket(Bucket=self.bucket)
        for i in range(N):
            client.put_object(Bucket=self.bucket, Key=self.object_id(i), Body=text_of(i))

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        client = self.server.client()
        client.delete_objects(
            Bucket=self.bucket,
            Delete={"Objects": [{"Key": self.object_id(i)} for i in deleted]},
        )
        for i in edited:
            client.put_object(Bucket=self.bucket, Key=self.object_id(i), Body=text_of(i, True))


@dataclass
class GitCase:
    path: Path
    per_object_acl: bool = False

    def __post_init__(self) -> None:
        self.repo = GitRepo(self.path)

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "git"\nurl = "{self.repo.url}"\n'
            f'access = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return f"items/{i:04d}.md"

    def load(self) -> None:
        for i in range(N):
            self.repo.write(self.object_id(i), text_of(i))
        self.repo.commit(f"{N} items")

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            (self.path / self.object_id(i)).unlink()
        for i in edited:
            self.repo.write(self.object_id(i), text_of(i, True))
        self.repo.commit("delete 5 %, edit 5 %")


@dataclass
class WebCase:
    """A site on the local HTTP server: a sitemap of N pages, each with an ETag."""

    server: LocalHttpServer
    per_object_acl: bool = False

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "web"\nsitemaps = ["{self.server.url("/sitemap.xml")}"]\n'
            'user_agent = "HeadwaterTest/1.0"\nrequests_per_second = 1000.0\nmax_attempts = 1\n'
            f'access = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return self.server.url(f"/p/{i:04d}")

    def page(self, i: int, edited: bool = False) -> None:
        body = html.escape(text_of(i, edited).split("\n\n", 1)[1])
        self.server.html(
            f"/p/{i:04d}",
            f"<html><head><title>Item {i}</title></head><body><main><h1>Item {i}</h1>"
            f"<p>{body}</p></main></body></html>",
            etag=f'"{i}-{int(edited)}"',
        )

    def sitemap(self, pages: list[int]) -> None:
        self.server.route(
            "/sitemap.xml",
            Reply(
                urlset(self.server, *(f"/p/{i:04d}" for i in pages)), content_type="application/xml"
            ),
        )

    def load(self) -> None:
        for i in range(N):
            self.page(i)
        self.sitemap(list(range(N)))

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.server.remove(f"/p/{i:04d}")
        for i in edited:
            self.page(i, edited=True)
        gone = set(deleted)
        self.sitemap([i for i in range(N) if i not in gone])


@dataclass
class WebdavCase:
    """A folder on the real WsgiDAV server (tests/connectors/webdav), written on disk."""

    server: DavServer
    folder: Path = field(init=False)
    per_object_acl: bool = False

    def __post_init__(self) -> None:
        self.folder = self.server.root / f"rt{uuid.uuid4().hex[:10]}"
        self.folder.mkdir()

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "webdav"\n'
            f'url = "{self.server.url}/{self.folder.name}/"\n'
            f'username = "{DAV_USER}"\npassword = "{DAV_PASSWORD}"\n'
            f'access = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return f"item-{i:04d}.md"

    def load(self) -> None:
        for i in range(N):
            (self.folder / self.object_id(i)).write_text(text_of(i), encoding="utf-8")

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            (self.folder / self.object_id(i)).unlink()
        for i in edited:
            (self.folder / self.object_id(i)).write_text(text_of(i, True), encoding="utf-8")


@dataclass
class GdriveCase:
    """The fake Drive API (tests/fakes/gdrive): each file carries its own permissions,
    so the ACL step re-shares 5 % of the files from one user to another."""

    drive: FakeDrive
    per_object_acl: bool = True
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "gdrive"\nbase_url = "{self.drive.url}"\n'
            f'token = "{DRIVE_TOKEN}"\npage_size = 100\n'
        )

    def object_id(self, i: int) -> str:
        return f"file{i:04d}"

    def load(self) -> None:
        for i in range(N):
            name = f"item-{i:04d}.md"
            self.drive.put(self.object_id(i), name, text_of(i), readers=(OLD_READER,))

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.drive.remove(self.object_id(i))
        for i in edited:
            self.drive.put(self.object_id(i), f"item-{i:04d}.md", text_of(i, True))
        for i in regranted:
            grant = {"type": "user", "role": "reader", "emailAddress": NEW_READER}
            self.drive.share(self.object_id(i), [grant])


@dataclass
class ConfluenceCase:
    """The fake Confluence site (tests/fakes/confluence): one space both users may read,
    every page restricted to one of them, so a page's ACL is its restriction; the ACL
    step moves 5 % of the restrictions from one user to the other, which arrives with the
    ACL refresh (``acl_refresh_every = "0s"``: a restriction does not move lastmodified)."""

    site: FakeConfluence
    per_object_acl: bool = True
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})
    ids: dict[int, str] = field(default_factory=dict)

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "confluence"\nbase_url = "{self.site.url}"\n'
            f'email = "{self.site.user}"\napi_token = "{self.site.token}"\nspaces = ["ENG"]\n'
            'page_size = 100\nretry_initial_wait = 0.0\nacl_refresh_every = "0s"\n'
        )

    def object_id(self, i: int) -> str:
        return self.ids[i]

    def load(self) -> None:
        self.site.users.update({"acc-kim": OLD_READER, "acc-ann": NEW_READER})
        self.site.add_space("ENG", [("user", "acc-kim"), ("user", "acc-ann")])
        for i in range(N):
            body = f"<p>{html.escape(text_of(i).split(chr(10) * 2, 1)[1])}</p>"
            self.ids[i] = self.site.add("ENG", f"Item {i}", body, read_users=["acc-kim"])

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.site.delete(self.ids[i])
        for i in edited:
            body = html.escape(text_of(i, True).split(chr(10) * 2, 1)[1])
            self.site.edit(self.ids[i], f"<p>{body}</p>")
        for i in regranted:
            self.site.content[self.ids[i]].read_users = ["acc-ann"]


@dataclass
class PushCase:
    """The push source: the operations ``POST /v1/sources/{id}/documents:batch`` commits
    (``Workspace.push``), then ``index``; each document carries its own ACL."""

    per_object_acl: bool = True
    ws: Workspace | None = None
    results: list[PushResult] = field(default_factory=list)

    def source(self) -> str:
        return f'[[source]]\nid = "src"\ntype = "push"\naccess = {{ groups = ["{STAFF}"] }}\n'

    def object_id(self, i: int) -> str:
        return f"ticket-{i:04d}"

    def upsert(self, i: int, version: int, *, edited: bool = False, user: bool = False) -> PushOp:
        access = Access(users=(NEW_READER,)) if user else Access(groups=(STAFF,))
        doc = SourceDocument(
            object_id=self.object_id(i),
            locator=f"push://src/{self.object_id(i)}",
            title=f"Item {i}",
            version=str(version),
            content=text_of(i, edited).encode(),
            media_type="text/markdown",
            sequence=version,
            access=access,
        )
        return PushOp("upsert", self.object_id(i), version, doc)

    def load(self) -> None:
        assert self.ws is not None
        self.results = self.ws.push("src", [self.upsert(i, 1) for i in range(N)])

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        assert self.ws is not None
        ops = [PushOp("delete", self.object_id(i), 2) for i in deleted]
        ops += [self.upsert(i, 2, edited=True) for i in edited]
        ops += [self.upsert(i, 2, user=True) for i in regranted]
        self.results = self.ws.push("src", ops)

    def sync(self, ws: Workspace) -> dict[str, int]:
        report = ws.index()
        assert report.failed == 0, report
        statuses = Counter(r.status for r in self.results)
        return {k: statuses[k] for k in ("new", "changed", "deleted", "failed")}
