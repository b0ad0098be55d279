"""The git connector on real repositories: first read, incremental diffs with explicit
deletes, force-pushes, a listing that breaks half way, and validate() messages."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from git_support import GitRepo, http_status_server, make_connector

from headwater.connectors.base import Scoped
from headwater.connectors.git import GitConnector
from headwater.connectors.git._repo import resolve_url
from headwater.connectors.testing import FAR_FUTURE, ReadResult, collect, no_known
from headwater.errors import ConfigError, CredentialError, FatalError, TransientError
from headwater.types import Checkpoint, Deleted, Failure, KnownVersions, SourceDocument, Window

WINDOW = Window(None, FAR_FUTURE)


def read(
    connector: GitConnector, checkpoint: Checkpoint | None = None, known: KnownVersions = no_known
) -> ReadResult:
    return collect(connector.read(WINDOW, checkpoint, known))


def summary(result: ReadResult) -> list[tuple[str, str]]:
    kinds = {SourceDocument: "doc", Deleted: "deleted", Failure: "failed"}
    return [
        (kinds[type(i)], i.object_id)
        for i in result.items
        if isinstance(i, SourceDocument | Deleted | Failure)
    ]


def test_first_read_lists_the_tree_at_head(repo: GitRepo, tmp_path: Path) -> None:
    connector = make_connector(repo.url, tmp_path / "state", page_size=3)
    result = read(connector)
    docs = {d.object_id: d for d in result.documents}
    assert list(docs) == ["README.md", "guides/setup.md", "guides/usage.txt", "zz/notes.md"]
    setup = docs["guides/setup.md"]
    assert setup.version == repo.blob("guides/setup.md") == setup.fetch_ref
    assert setup.content is None and connector.fetch(setup.version) == b"Install it.\n"
    assert setup.metadata["author"] == "Ada Author <ada@example.com>"
    assert setup.metadata["hierarchy"] == setup.object_id  # the path in the repository
    assert setup.metadata["commit"] == repo.git("rev-parse", "HEAD")
    assert setup.metadata["committed_at"] == "2024-01-03T12:00:00+00:00"
    assert setup.updated_at is not None and setup.title == ""
    assert setup.locator == f"{repo.url}#main:guides/setup.md"
    assert (tmp_path / "state" / "git" / "git-test" / "HEAD").exists()
    cursors = [json.loads(i.cursor) for i in result.items if isinstance(i, Checkpoint)]
    assert [c["after"] for c in cursors] == ["guides/usage.txt", "zz/notes.md"]
    assert result.final is not None
    final = json.loads(result.final.cursor)
    assert final == {"v": 1, "commit": repo.git("rev-parse", "HEAD"), "scope": final["scope"]}


def test_unchanged_reread_reads_no_blobs(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connector = make_connector(repo.url, tmp_path / "state")
    first = read(connector)
    known = {d.object_id: d.version for d in first.documents}
    trace = tmp_path / "git-trace.log"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert summary(read(connector, first.final)) == []  # nothing changed since the commit
    again = read(connector, None, known.get)  # a full listing with every version known
    assert {d.object_id: d.version for d in again.documents} == known
    commands = trace.read_text()
    assert "git fetch" in commands and "cat-file blob" not in commands
    assert [d.metadata for d in again.documents] == [d.metadata for d in first.documents]


def test_changes_deletes_and_renames_come_as_a_diff(repo: GitRepo, tmp_path: Path) -> None:
    connector = make_connector(repo.url, tmp_path / "state")
    first = read(connector)
    repo.write("guides/setup.md", "Install it twice.\n")
    repo.git("rm", "-q", "README.md")
    repo.git("mv", "guides/usage.txt", "guides/using.txt")
    repo.write("new/page.md", "New.\n")
    head = repo.commit("second")
    second = read(connector, first.final)
    assert summary(second) == [
        ("deleted", "README.md"),
        ("doc", "guides/setup.md"),
        ("deleted", "guides/usage.txt"),
        ("doc", "guides/using.txt"),
        ("doc", "new/page.md"),
    ]
    setup = next(d for d in second.documents if d.object_id == "guides/setup.md")
    assert connector.fetch(setup.version) == b"Install it twice.\n"
    assert setup.metadata["commit"] == head
    assert second.final is not None and json.loads(second.final.cursor)["commit"] == head
    assert "README.md" not in set(connector.enumerate())


def test_resume_continues_the_same_diff(repo: GitRepo, tmp_path: Path) -> None:
    connector = make_connector(repo.url, tmp_path / "state", page_size=1)
    first = read(connector)
    for name in ("a.md", "b.md", "c.md"):
        repo.write(name, name)
    repo.commit("three files")
    full = read(connector, first.final)
    middle = next(i for i in full.items if isinstance(i, Checkpoint))
    repo.write("later.md", "pushed while the run was down")
    repo.commit("later")
    resumed = read(connector, middle)
    assert summary(resumed) == [("doc", "b.md"), ("doc", "c.md")]  # the pinned diff, not later
    after = read(connector, resumed.final)
    assert summary(after) == [("doc", "later.md")]
    head = repo.git("rev-parse", "HEAD")
    scope = json.loads(middle.cursor)["scope"]
    cursor = {"v": 1, "base": None, "head": head, "after": "not/there", "scope": scope}
    odd = Checkpoint(json.dumps(cursor))
    assert len(read(connector, odd).documents) == 8  # an unknown path redoes the listing


def test_force_push_falls_back_to_a_full_listing(
    repo: GitRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    connector = make_connector(repo.url, tmp_path / "state")
    repo.write("extra.md", "extra")
    repo.commit("to be rewritten")
    synced = read(connector).final
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.write("other.md", "other")
    repo.commit("rewritten history")
    with caplog.at_level(logging.WARNING):
        result = read(connector, synced)
    assert "force-pushed" in caplog.text
    assert {d.object_id for d in result.documents} == set(connector.enumerate())
    assert "extra.md" not in set(connector.enumerate())
    assert synced is not None
    scope = json.loads(synced.cursor)["scope"]
    lost = Checkpoint(json.dumps({"v": 1, "commit": "0" * 40, "scope": scope}))
    with caplog.at_level(logging.WARNING):
        assert len(read(connector, lost).documents) == 5
    assert "is gone" in caplog.text


def test_globs_size_limit_and_symlinks(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("guides/big.md", "x" * 100)
    (repo.path / "guides" / "link.md").symlink_to("setup.md")
    repo.commit("big file and a link")
    connector = make_connector(
        repo.url, tmp_path / "state", include=["guides/**"], exclude=["*.txt"], max_file_bytes=50
    )
    result = read(connector)
    assert summary(result) == [("failed", "guides/big.md"), ("doc", "guides/setup.md")]
    failure = next(i for i in result.items if isinstance(i, Failure))
    assert failure.error_class == "too_large" and failure.permanent
    assert set(connector.enumerate()) == {"guides/big.md", "guides/setup.md"}


def test_listing_that_breaks_half_way_raises(repo: GitRepo, tmp_path: Path) -> None:
    connector = make_connector(repo.url, tmp_path / "state")
    read(connector)
    tree = repo.git("rev-parse", "HEAD:zz")
    mirror = tmp_path / "state" / "git" / "git-test"
    (mirror / "objects" / tree[:2] / tree[2:]).unlink()  # the mirror loses the tree of zz/
    listed: list[str] = []
    with pytest.raises(FatalError, match="Could not read"):
        listed.extend(connector.enumerate())
    assert listed == ["README.md", "guides/setup.md", "guides/usage.txt"]
    stream = connector.read(WINDOW, None, no_known)
    with pytest.raises(FatalError):
        collect(stream)


def test_validate_names_a_missing_repository(tmp_path: Path) -> None:
    missing = (tmp_path / "nowhere").as_uri()
    with pytest.raises(ConfigError) as caught:
        make_connector(missing, tmp_path / "state").validate()
    message = str(caught.value)
    assert "not found (404" in message and "fix `url`" in message and "\n" not in message


def test_validate_names_a_missing_branch(repo: GitRepo, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no branch 'release'.*fix `branch`"):
        make_connector(repo.url, tmp_path / "state", branch="release").validate()


def test_a_read_of_a_missing_branch_names_branch(repo: GitRepo, tmp_path: Path) -> None:
    """validate() named `branch`; a sync failed with 'FatalError: … couldn't find remote
    ref refs/heads/nope' instead."""
    connector = make_connector(repo.url, tmp_path / "state", branch="nope")
    with pytest.raises(ConfigError, match=r"no such branch.*fix `branch`"):
        read(connector)


@pytest.mark.parametrize("status", [401, 403])
def test_validate_names_denied_access(status: int, tmp_path: Path) -> None:
    with http_status_server(status) as url:
        secret_url = url.replace("http://", "http://bot:tok3n@")
        with pytest.raises(CredentialError) as caught:
            make_connector(secret_url, tmp_path / "state").validate()
    message = str(caught.value)
    assert "access denied (401/403" in message and "tok3n" not in message
    assert "\n" not in message


def test_validate_names_a_missing_remote_repository(tmp_path: Path) -> None:
    with http_status_server(404) as url, pytest.raises(ConfigError, match=r"not found \(404"):
        make_connector(url, tmp_path / "state").validate()


def test_validate_names_refused_connection(tmp_path: Path) -> None:
    with http_status_server(200) as url:
        pass  # the server is gone: its port now refuses connections
    with pytest.raises(TransientError) as caught:
        make_connector(url, tmp_path / "state").validate()
    assert "connection refused" in str(caught.value) and "\n" not in str(caught.value)


def test_in_scope_follows_the_globs(repo: GitRepo, tmp_path: Path) -> None:
    connector = make_connector(
        repo.url, tmp_path / "state", include=["guides/**"], exclude=["*.txt"]
    )
    assert isinstance(connector, Scoped)
    assert connector.in_scope("guides/setup.md")
    assert not connector.in_scope("guides/usage.txt") and not connector.in_scope("README.md")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("handbook", "/srv/config/handbook"),
        ("../repos/handbook.git", "/srv/config/../repos/handbook.git"),
        ("/abs/handbook", "/abs/handbook"),
        ("file:///abs/handbook", "file:///abs/handbook"),
        ("https://host/handbook.git", "https://host/handbook.git"),
        ("git@github.com:acme/handbook.git", "git@github.com:acme/handbook.git"),
        ("host:handbook", "host:handbook"),
        ("./a:b", "/srv/config/a:b"),  # a '/' before the ':' is a path, as git reads it
    ],
)
def test_only_relative_local_paths_resolve_against_the_config(url: str, expected: str) -> None:
    assert resolve_url(url, Path("/srv/config")) == expected
