"""The git connector under the real sync runner: unchanged runs read nothing, a commit
syncs exactly its changes, deletes included."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_support import GitRepo

from headwater import Workspace
from headwater.errors import ConfigError


def test_sync_runs_follow_commits(repo: GitRepo, tmp_path: Path) -> None:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "handbook"\ntype = "git"\nurl = "{repo.url}"\n'
        "access = { public = true }\n"
    )
    with Workspace.open(config) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 4, 4)
        again = ws.sync(index=False).runs[0]
        assert (again.counts.seen, again.fetched) == (0, 0)
        repo.write("guides/setup.md", "Install it twice.\n")
        repo.git("rm", "-q", "zz/notes.md")
        repo.commit("edit and delete")
        third = ws.sync(index=False).runs[0]
        counts = third.counts
        assert (counts.changed, counts.deleted, counts.unchanged, third.fetched) == (1, 1, 0, 1)
        assert ws.document(source="handbook", object_id="zz/notes.md")["state"] == "deleted"


def test_a_widened_selection_reads_files_no_commit_touched(repo: GitRepo, tmp_path: Path) -> None:
    """A diff holds only changed files: after `include` widens or `max_file_bytes` rises,
    the next run lists the tree, so the newly selected files arrive without a commit."""
    config = tmp_path / "headwater.toml"
    head = (
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        f'[[source]]\nid = "handbook"\ntype = "git"\nurl = "{repo.url}"\n'
        "access = { public = true }\n"
    )
    config.write_text(head + 'include = ["guides/**"]\nmax_file_bytes = 10\n')
    with Workspace.open(config) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.counts.new, first.counts.failed) == (1, 1)  # setup.md is 12 bytes
    config.write_text(head + "max_file_bytes = 100\n")
    with Workspace.open(config) as ws:
        second = ws.sync(index=False).runs[0]
        assert (second.counts.new, second.counts.unchanged, second.fetched) == (3, 1, 3)
        for path in ("README.md", "guides/setup.md", "zz/notes.md"):
            assert ws.document(source="handbook", object_id=path)["state"] == "active"
        third = ws.sync(index=False).runs[0]  # the selection is recorded: a diff again
        assert (third.counts.seen, third.fetched) == (0, 0)


def _config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        f'[[source]]\nid = "handbook"\ntype = "git"\nurl = "{url}"\n'
        "access = { public = true }\n"
    )
    return config


def test_a_shallow_clone_is_synced_and_followed(repo: GitRepo, tmp_path: Path) -> None:
    """A `git clone --depth 1` as `url` failed with 'fatal: Needed a single revision'
    (git refused to fetch its shallow root into the mirror)."""
    shallow = tmp_path / "shallow"
    repo.git("clone", "-q", "--depth", "1", "--branch", "main", repo.url, str(shallow))
    with Workspace.open(_config(tmp_path, str(shallow))) as ws:
        ws.validate("handbook")
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4), first.error
        repo.write("guides/setup.md", "Install it twice.\n")
        repo.commit("edit")
        repo.git("-C", str(shallow), "fetch", "-q", "--depth", "1", "origin", "main")
        repo.git("-C", str(shallow), "reset", "-q", "--hard", "FETCH_HEAD")
        second = ws.sync(index=False).runs[0]
        assert (second.status, second.counts.changed) == ("succeeded", 1), second.error
        assert second.fetched == 1  # the unchanged files are skipped on their blob sha


def test_a_relative_url_resolves_against_the_config_folder(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`url = "source"` beside headwater.toml: validate and sync both read that folder,
    whatever the working directory (git resolved it against the caller's directory for
    validate and against the mirror for sync: validate said ok, sync failed)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with Workspace.open(_config(tmp_path, "source")) as ws:
        ws.validate("handbook")
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.new) == ("succeeded", 4), run.error


def test_validate_fails_where_sync_would(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative url that names a repository only from the working directory is not
    the config's: validate refuses it, naming `url`, as sync does."""
    monkeypatch.chdir(repo.path.parent)  # `source` exists from here ...
    config_dir = tmp_path / "config"
    config_dir.mkdir()  # ... but not beside the config
    with Workspace.open(_config(config_dir, "source")) as ws:
        with pytest.raises(ConfigError, match="fix `url`"):
            ws.validate("handbook")
        run = ws.sync(index=False).runs[0]
        assert run.status == "failed" and "fix `url`" in (run.error or "")
