"""The s3 connector under the real sync runner: an unchanged bucket downloads nothing,
and a deleted object is pruned after the complete listing."""

from __future__ import annotations

from pathlib import Path

from s3_support import S3Server

from headwater import Workspace


def test_sync_downloads_only_what_changed(s3_server: S3Server, bucket: str, tmp_path: Path) -> None:
    client = s3_server.client()
    for i in range(6):
        client.put_object(Bucket=bucket, Key=f"notes/{i}.md", Body=f"# Note {i}\n\nText.\n")
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "notes"\ntype = "s3"\nbucket = "{bucket}"\n'
        f'endpoint_url = "{s3_server.endpoint}"\nregion = "us-east-1"\n'
        'access_key_id = "test"\nsecret_access_key = "test"\npage_size = 4\n'
        "prune_max_fraction = 0.5\naccess = { public = true }\n"
    )
    with Workspace.open(config) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 6, 6)
        gets = s3_server.count("GET", query=f"/{bucket}/notes/")
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.fetched) == (6, 0)
        assert s3_server.count("GET", query=f"/{bucket}/notes/") == gets
        client.put_object(Bucket=bucket, Key="notes/1.md", Body=b"# Note 1\n\nEdited.\n")
        client.delete_object(Bucket=bucket, Key="notes/2.md")
        third = ws.sync(index=False).runs[0]
        counts = third.counts
        assert (counts.changed, counts.unchanged, counts.deleted, third.fetched) == (1, 4, 1, 1)


def test_a_narrowed_exclude_is_not_blocked_by_the_prune_fraction(
    s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    """3 of 5 objects newly excluded (60% > the default 20%): a config change, not a broken
    listing, so they are deleted as excluded_by_config instead of blocking the prune."""
    client = s3_server.client()
    for name in ("a", "b", "drafts/c", "drafts/d", "drafts/e"):
        client.put_object(Bucket=bucket, Key=f"pub/{name}.md", Body=f"# {name}\n")
    config = tmp_path / "headwater.toml"
    base = (
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "pub"\ntype = "s3"\nbucket = "{bucket}"\nprefix = "pub/"\n'
        f'endpoint_url = "{s3_server.endpoint}"\nregion = "us-east-1"\n'
        'access_key_id = "test"\nsecret_access_key = "test"\naccess = { public = true }\n'
    )
    config.write_text(base)
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
    config.write_text(base + 'exclude = ["drafts/**"]\n')
    with Workspace.open(config) as ws:
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("succeeded", 3)
        assert ws.document(source="pub", object_id="pub/drafts/c.md")["state"] == "deleted"
        assert ws.document(source="pub", object_id="pub/a.md")["state"] == "active"
