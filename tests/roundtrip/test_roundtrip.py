"""The round trip per connector, at CI size (issue 29, goal 3): 500 items in the real
server or its fake, a sync, then 5 % deleted, 5 % edited and (where the connector carries
an ACL per object) 5 % re-permissioned, a re-sync, and EXACT counts in the run, the
manifest and the sqlite index. A delete that never happens, an edit left stale or a
revocation still served fails the test.

Each case reuses its connector's test helpers (``tests/connectors/<name>/``,
``tests/fakes/``): the real PostgreSQL and MariaDB for ``sql``, moto over HTTP for
``s3``, the git CLI for ``git``, the local HTTP server for ``web``, WsgiDAV for
``webdav``, ``Workspace.push`` (what ``POST /v1/sources/{id}/documents:batch`` commits)
for ``push``, and the fake Drive API for ``gdrive`` and the fake site for
``confluence``.

Connectors whose ACL is the source's ``access`` (filesystem, s3, git, web, webdav) have
no per-object ACL to change; the ACL step runs where ACLs are per object: sql
(``access_column``), push (each document's ``access``), gdrive (each file's permissions)
and confluence (page restrictions).

The webdav case starts WsgiDAV in its own process (``subprocess.Popen`` in its conftest),
so this module is marked ``process`` and runs outside the ``--fast`` tier.
"""

from __future__ import annotations

import html
import importlib.util
import logging
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from fakes.confluence import FakeConfluence
from fakes.gdrive import TOKEN as DRIVE_TOKEN
from fakes.gdrive import FakeDrive
from headwater import Workspace
from headwater.connectors.confluence import ConfluenceConnector
from headwater.connectors.gdrive import GdriveConnector
from headwater.connectors.webdav import WebdavConnector
from headwater.sync.push import PushOp, PushResult
from headwater.types import Access, SourceDocument

_CONNECTORS = Path(__file__).resolve().parents[1] / "connectors"
for _name in ("", "s3", "sql", "git", "web", "webdav", "azure_blob", "gcs"):
    sys.path.insert(0, str(_CONNECTORS / _name) if _name else str(_CONNECTORS))

from azure_support import Azurite, azurite  # noqa: E402
from gcs_support import GcsServer, fake_gcs_server  # noqa: E402
from git_support import GitRepo  # noqa: E402
from httpserver import LocalHttpServer, Reply  # noqa: E402
from s3_support import S3Server, free_port  # noqa: E402
from saas_cases import DropboxCase, JiraCase, SharepointCase, azure_blob_case, gcs_case  # noqa: E402
from sql_support import ENGINE_URLS, URLS  # noqa: E402
from web_site import urlset  # noqa: E402
from webdav_support import PASSWORD as DAV_PASSWORD  # noqa: E402
from webdav_support import USER as DAV_USER  # noqa: E402
from webdav_support import DavServer  # noqa: E402

from fakes.dropbox import FakeDropbox  # noqa: E402
from fakes.jira import FakeJira  # noqa: E402
from fakes.sharepoint import FakeGraph  # noqa: E402

# The webdav tests' session fixture (a WsgiDAV process), taken from their conftest under
# another module name so pytest serves it here too.
_spec = importlib.util.spec_from_file_location(
    "webdav_conftest", _CONNECTORS / "webdav" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_webdav_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_webdav_conftest)
dav_server = _webdav_conftest.dav_server


@pytest.fixture(scope="module")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """Azurite's blob service, one per module (as tests/connectors/azure_blob)."""
    with azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture(scope="module")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsServer]:
    """fake-gcs-server, one per module (as tests/connectors/gcs)."""
    with fake_gcs_server(tmp_path_factory.mktemp("gcs")) as server:
        yield server


N = 500
FIVE_PERCENT = N // 20
STAFF = "staff"
NEW_READER = "ann@example.com"
OLD_READER = "kim@example.com"  # the reader of the connectors whose ACLs name users
# A delete found by the complete listing is "pruned"; one the source reports (a git diff)
# is "deleted_in_source".
TOMBSTONE_REASONS = ("pruned", "deleted_in_source")


def text_of(i: int, edited: bool = False) -> str:
    """A short text with a word only item ``i`` holds (keyword search finds exactly it)."""
    tail = " It was edited today." if edited else ""
    return f"# Item {i}\n\nItem {i} carries the marker mk{i:04d}x.{tail}\n"


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
        self.repo.commit("500 items")

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            (self.path / self.object_id(i)).unlink()
        for i in edited:
            self.repo.write(self.object_id(i), text_of(i, True))
        self.repo.commit("delete 5 %, edit 5 %")


@dataclass
class WebCase:
    """A site on the local HTTP server: a sitemap of 500 pages, each with an ETag."""

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
        self.sitemap([i for i in range(N) if i not in set(deleted)])


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


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 API over real HTTP on 127.0.0.1, in a thread (as tests/connectors/s3)."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # 2,000 request lines
    port = free_port()
    httpd = make_server(
        "127.0.0.1", port, DomainDispatcherApplication(create_backend_app), threaded=True
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield S3Server(endpoint=f"http://127.0.0.1:{port}")
    httpd.shutdown()
    thread.join()


@pytest.fixture
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    kind = str(request.param)
    if kind == "filesystem":
        yield FilesystemCase(tmp_path / "tree")
    elif kind in ("postgresql", "mariadb"):
        sql = SqlCase(kind)
        try:
            yield sql
        finally:
            sql.close()
    elif kind == "web":
        with LocalHttpServer() as server:
            yield WebCase(server)
    elif kind == "webdav":
        yield WebdavCase(request.getfixturevalue("dav_server"))
    elif kind == "gdrive":
        with FakeDrive() as drive:
            yield GdriveCase(drive)
    elif kind == "confluence":
        with FakeConfluence() as site:
            yield ConfluenceCase(site)
    elif kind == "push":
        yield PushCase()
    elif kind == "s3":
        yield S3Case(request.getfixturevalue("s3_server"))
    elif kind == "jira":
        with FakeJira() as site:
            yield JiraCase(site)
    elif kind == "dropbox":
        with FakeDropbox() as dbx:
            yield DropboxCase(dbx)
    elif kind == "sharepoint":
        with FakeGraph() as graph:
            yield SharepointCase(graph)
    elif kind == "azure_blob":
        yield azure_blob_case(request.getfixturevalue("azurite_server"))
    elif kind == "gcs":
        yield gcs_case(request.getfixturevalue("gcs_server"))
    else:
        yield GitCase(tmp_path / "repo")


def finds(ws: Workspace, i: int, **who: Any) -> bool:
    """Whether a keyword search for item ``i``'s marker returns its document."""
    record = ws.manifest.document_by_object("src", OBJECT_IDS[i])
    assert record is not None, OBJECT_IDS[i]
    hits = ws.search(f"mk{i:04d}x", mode="keyword", k=5, **who)
    return any(h["document_id"] == record.document_id for h in hits)


OBJECT_IDS: dict[int, str] = {}


@pytest.mark.parametrize(
    "case",
    [
        "filesystem",
        "postgresql",
        "mariadb",
        "s3",
        "git",
        "web",
        "webdav",
        "push",
        "gdrive",
        "confluence",
        "jira",
        "dropbox",
        "azure_blob",
        "sharepoint",
        "gcs",
    ],
    indirect=True,
)
def test_round_trip_500_items_exact_counts(case: Any, tmp_path: Path) -> None:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 16\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n' + case.source(),
        encoding="utf-8",
    )
    # Deterministic, disjoint 5 % slices spread over the whole key range.
    deleted = list(range(0, N, 20))
    edited = list(range(1, N, 20))
    regranted = list(range(2, N, 20)) if case.per_object_acl else []
    assert len(deleted) == len(edited) == FIVE_PERCENT
    with Workspace.open(
        config,
        connector_types={
            "webdav": WebdavConnector,
            "gdrive": GdriveConnector,
            "confluence": ConfluenceConnector,
        },
    ) as ws:
        case.ws = ws
        case.load()
        OBJECT_IDS.clear()
        OBJECT_IDS.update({i: case.object_id(i) for i in range(N)})
        first = sync(ws, case)
        assert (first["new"], first["failed"]) == (N, 0), first
        assert_exact(ws, active=N, deleted=[], revision_2=[])

        case.mutate(deleted, edited, regranted)
        second = sync(ws, case)
        changed = len(edited) + len(regranted)
        assert second == {"new": 0, "changed": changed, "deleted": FIVE_PERCENT, "failed": 0}
        assert_exact(ws, active=N - FIVE_PERCENT, deleted=deleted, revision_2=edited + regranted)

        reader = getattr(case, "reader", {"groups": [STAFF]})
        for i in edited[:3]:
            hits = ws.search(f"mk{i:04d}x", mode="keyword", k=1, **reader)
            assert "edited today" in hits[0]["chunk"]
        for i in deleted[:3]:
            assert not finds(ws, i, **reader)
        for i in regranted:
            assert not finds(ws, i, **reader), f"{i}: revoked reader still finds it"
            assert finds(ws, i, user=NEW_READER)
        assert finds(ws, 3, **reader) and not finds(ws, 3, user=NEW_READER)


def sync(ws: Workspace, case: Any) -> dict[str, int]:
    """The run's counts: a content sync and index, or the push case's own results."""
    if isinstance(case, PushCase):
        return case.sync(ws)
    run = ws.sync().runs[0]
    assert run.status == "succeeded", run
    c = run.counts
    return {"new": c.new, "changed": c.changed, "deleted": c.deleted, "failed": c.failed}


def assert_exact(ws: Workspace, *, active: int, deleted: list[int], revision_2: list[int]) -> None:
    """The manifest and the sqlite index agree with the source, document for document."""
    manifest = ws.manifest
    assert manifest.count_documents("src") == active
    assert manifest.count_documents("src", "deleted") == len(deleted)
    tombstones = sum(manifest.count_tombstones("src", why) for why in TOMBSTONE_REASONS)
    assert tombstones == len(deleted)
    records = {r.object_id: r for r in manifest.source_documents_after("src", "", 10 * N)}
    assert len(records) == active
    gone = {OBJECT_IDS[i] for i in deleted}
    assert not gone & records.keys()
    bumped = {OBJECT_IDS[i] for i in revision_2}
    for object_id, record in records.items():
        assert record.revision == (2 if object_id in bumped else 1), object_id
    inventory = {row.document_id: row for row in ws.sink("main").inventory()}
    assert inventory.keys() == {r.document_id for r in records.values()}
    for record in records.values():
        row = inventory[record.document_id]
        assert (row.revision, row.chunks) == (record.revision, 1), record.object_id
