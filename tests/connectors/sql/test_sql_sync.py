"""The sql connector under the real sync runner: unchanged rows are not re-read, an edit
is one change, a deleted row is pruned after the complete listing."""

from __future__ import annotations

from pathlib import Path

from sql_support import Database

from headwater import Workspace


def test_sync_follows_the_table(db: Database, docs: str, tmp_path: Path) -> None:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "rows"\ntype = "sql"\nurl = "{db.url}"\ntable = "{docs}"\n'
        'id_columns = ["id"]\ncontent_template = "# {title}\\n\\n{body}\\n"\n'
        'media_type = "text/markdown"\naccess_column = "readers"\nprune_max_fraction = 0.5\n'
    )
    with Workspace.open(config) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4)
        assert ws.document(source="rows", object_id="1")["title"] == "Alpha"
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.counts.changed) == (4, 0)
        db.execute(f"UPDATE {docs} SET body = 'edited' WHERE id = 1")
        db.execute(f"DELETE FROM {docs} WHERE id = 4")
        third = ws.sync(index=False).runs[0]
        counts = third.counts
        assert (counts.changed, counts.unchanged, counts.deleted) == (1, 2, 1)
