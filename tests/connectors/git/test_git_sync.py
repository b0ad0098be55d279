"""The git connector under the real sync runner: unchanged runs read nothing, a commit
syncs exactly its changes, deletes included."""

from __future__ import annotations

from pathlib import Path

from git_support import GitRepo

from headwater import Workspace


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
