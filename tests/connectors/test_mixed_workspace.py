"""One workspace over all six connectors, each against a real local server.

filesystem (a directory), web (sitemap on a local HTTP server), rss (a feed on it), s3
(moto's server over real HTTP), sql (the PostgreSQL server) and git (a file:// repository)
sync together; a re-sync downloads nothing; a change and a delete in each source arrive.
"""

from __future__ import annotations

import email.utils
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
import sqlalchemy as sa
from httpserver import LocalHttpServer, Reply
from moto.server import ThreadedMotoServer

from headwater import Workspace
from ports import free_port
from workspace_helpers import filesystem_source, write_config

PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@x", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null",
}  # fmt: skip


@pytest.fixture
def s3_endpoint() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def table() -> Iterator[str]:
    name = f"hw_mixed_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(PG)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {name} (id int primary key, title text, body text)"))
        conn.execute(
            sa.text(
                f"INSERT INTO {name} VALUES (1, 'Pricing', 'sqlrowalpha pricing table'),"
                " (2, 'Support', 'sqlrowbeta support hours')"
            )
        )
    yield name
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE {name}"))
    engine.dispose()


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
    )


def feed(server: LocalHttpServer, entries: list[tuple[str, str, str, str]]) -> None:
    items = "".join(
        f"<item><guid>{g}</guid><title>{t}</title><description>{d}</description>"
        f"<pubDate>{when}</pubDate></item>"
        for g, t, d, when in entries
    )
    body = f'<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>{items}</channel></rss>'
    server.route(
        "/feed.xml",
        Reply(body.encode(), content_type="application/rss+xml", etag=f'"{hash(body)}"'),
    )


def web_page(title: str, text: str) -> str:
    return f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1><p>{text}</p></main></body></html>"


def test_all_connectors_in_one_workspace(
    tmp_path: Path, corpus: Path, s3_endpoint: str, table: str
) -> None:
    # -- sources ---------------------------------------------------------------------
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
    )
    s3.create_bucket(Bucket="hw-mixed-kb")
    s3.put_object(
        Bucket="hw-mixed-kb", Key="a.md", Body=b"# S3 A\n\ns3objectalpha lives in a bucket.\n"
    )
    s3.put_object(Bucket="hw-mixed-kb", Key="b.txt", Body=b"s3objectbeta is plain text.\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "one.md").write_text("# One\n\ngitfileone is in the repository.\n")
    (repo / "two.md").write_text("# Two\n\ngitfiletwo is in the repository too.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")

    with LocalHttpServer() as server:
        server.route("/robots.txt", Reply(b"User-agent: *\nAllow: /\n", content_type="text/plain"))
        server.html("/p/1", web_page("Web one", "webpageone is served over HTTP."), etag='"p1-1"')
        server.html("/p/2", web_page("Web two", "webpagetwo is served over HTTP."), etag='"p2-1"')
        sitemap = (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{server.url('/p/1')}</loc></url><url><loc>{server.url('/p/2')}</loc></url></urlset>"
        )
        server.route("/sitemap.xml", Reply(sitemap.encode(), content_type="application/xml"))
        old = "Mon, 06 Jan 2025 10:00:00 GMT"
        feed(
            server,
            [
                ("e1", "Entry one", "rssentryone news", old),
                ("e2", "Entry two", "rssentrytwo news", old),
            ],
        )

        public = "{ public = true }"
        sources = filesystem_source(corpus, access=public) + "\n".join(
            [
                f'[[source]]\nid = "site"\ntype = "web"\nsitemaps = ["{server.url("/sitemap.xml")}"]\n'
                f"requests_per_second = 100\naccess = {public}\n",
                f'[[source]]\nid = "news"\ntype = "rss"\nurl = "{server.url("/feed.xml")}"\n'
                f"requests_per_second = 100\naccess = {public}\n",
                f'[[source]]\nid = "bucket"\ntype = "s3"\nbucket = "hw-mixed-kb"\nendpoint_url = "{s3_endpoint}"\n'
                f'region = "us-east-1"\naccess_key_id = "k"\nsecret_access_key = "s"\naccess = {public}\n',
                f'[[source]]\nid = "db"\ntype = "sql"\nurl = "{PG}"\ntable = "{table}"\n'
                f'id_columns = ["id"]\ntitle_column = "title"\ncontent_columns = ["body"]\naccess = {public}\n',
                f'[[source]]\nid = "repo"\ntype = "git"\nurl = "{repo.as_uri()}"\nbranch = "main"\n'
                f"access = {public}\n",
            ]
        )
        config = write_config(tmp_path, manifest_url=None, sources=sources)

        with Workspace.open(config) as ws:
            for source in ("docs", "site", "news", "bucket", "db", "repo"):
                ws.validate(source)
            first = {r.source: r for r in ws.sync().runs}
            assert {s: r.status for s, r in first.items()} == dict.fromkeys(first, "succeeded")
            assert {s: r.counts.new for s, r in first.items()} == {
                "docs": 5,
                "site": 2,
                "news": 2,
                "bucket": 2,
                "db": 2,
                "repo": 2,
            }
            for word, source in [
                ("webpageone", "site"),
                ("rssentrytwo", "news"),
                ("s3objectalpha", "bucket"),
                ("sqlrowbeta", "db"),
                ("gitfiletwo", "repo"),
                ("vacation", "docs"),
            ]:
                hits = ws.search(word, mode="keyword", k=3)
                assert hits and hits[0]["source"] == source, (word, hits)

            # -- an unchanged re-sync downloads nothing ---------------------------------
            server.clear_log()
            again = {r.source: r for r in ws.sync().runs}
            assert {s: r.counts.changed + r.counts.new for s, r in again.items()} == dict.fromkeys(
                again, 0
            )
            assert all(r.fetched == 0 for r in again.values())
            assert server.body_bytes() < 2000, "pages and feed came back 304 / sitemap only"

            # -- one change and one delete per source -------------------------------------
            (corpus / "readme.md").write_text("# Readme\n\nfreshfsword changed.\n")
            (corpus / "notes" / "deploy.txt").unlink()
            server.html("/p/1", web_page("Web one", "freshwebword changed."), etag='"p1-2"')
            server.route("/p/2", Reply(b"gone", status=410))
            time.sleep(1.1)  # the edited entry is dated after the last run's window
            now = email.utils.format_datetime(datetime.now(UTC), usegmt=True)
            feed(
                server,
                [
                    ("e1", "Entry one", "freshrssword changed", now),
                    ("e2", "Entry two", "rssentrytwo news", old),
                ],
            )
            s3.put_object(
                Bucket="hw-mixed-kb", Key="a.md", Body=b"# S3 A\n\nfreshs3word changed.\n"
            )
            s3.delete_object(Bucket="hw-mixed-kb", Key="b.txt")
            engine = sa.create_engine(PG)
            with engine.begin() as conn:
                conn.execute(
                    sa.text(f"UPDATE {table} SET body = 'freshsqlword changed' WHERE id = 1")
                )
                conn.execute(sa.text(f"DELETE FROM {table} WHERE id = 2"))
            engine.dispose()
            (repo / "one.md").write_text("# One\n\nfreshgitword changed.\n")
            git(repo, "rm", "-q", "two.md")
            git(repo, "commit", "-q", "-am", "second")

            third = {r.source: r for r in ws.sync(force=True).runs}
            changed = {s: r.counts.changed for s, r in third.items()}
            deleted = {s: r.counts.deleted for s, r in third.items()}
            assert changed == {"docs": 1, "site": 1, "news": 1, "bucket": 1, "db": 1, "repo": 1}
            assert deleted == {"docs": 1, "site": 1, "news": 0, "bucket": 1, "db": 1, "repo": 1}
            for word in (
                "freshfsword",
                "freshwebword",
                "freshrssword",
                "freshs3word",
                "freshsqlword",
                "freshgitword",
            ):
                assert ws.search(word, mode="keyword", k=1), word
            for gone in ("webpagetwo", "s3objectbeta", "sqlrowbeta", "gitfiletwo"):
                assert all(gone not in h["chunk"] for h in ws.search(gone, mode="keyword", k=3)), (
                    gone
                )
