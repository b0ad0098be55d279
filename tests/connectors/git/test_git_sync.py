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
