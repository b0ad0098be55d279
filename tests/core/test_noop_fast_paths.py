"""The no-op re-sync's fast paths give exactly what the general code gives.

Each shortcut taken for speed (``bench/noop.py``, docs/performance.md "No-op at scale")
is checked against the slower form it replaced, on the awkward inputs: names with quotes,
backslashes, non-ASCII and undecodable bytes; globs with and without excludes; rows read
positionally against rows read by name.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path, PurePosixPath

import pytest
from sqlalchemy import select

from headwater.connectors.filesystem import _after_cursor
from headwater.connectors.filesystem._read import fetch_ref
from headwater.connectors.globs import KeyFilter, compile_glob
from headwater.connectors.names import all_storable, is_storable
from headwater.manifest import schema as t
from headwater.manifest.records import BatchCommit, DocumentFields, DocumentRecord, DocumentWrite
from headwater.manifest.store import Manifest
from headwater.pipeline.parse._members import container_kind

NAMES = ["a.md", 'q"uote', "back\\slash", "é/日本.txt", "\udcff-undecodable", "tab\there", ""]


@pytest.mark.parametrize("name", NAMES)
def test_the_cursor_and_fetch_ref_are_the_json_they_replace(name: str, tmp_path: Path) -> None:
    st = os.stat(tmp_path)
    parts = tuple(name.split("/"))
    assert _after_cursor(parts) == json.dumps({"after": list(parts)})
    assert fetch_ref(name, st) == json.dumps({"path": name, "file": [st.st_dev, st.st_ino]})


@pytest.mark.parametrize(
    ("include", "exclude"),
    [(["**/*"], []), (["**"], []), ([], []), (["**/*"], ["drafts/"]), (["*.md"], []),
     (["**/*"], ["*.tmp"])],
)  # fmt: skip
def test_matches_is_the_include_and_exclude_globs(include: list[str], exclude: list[str]) -> None:
    keys = ["a", "a/b.md", "x.tmp", "drafts/c.md", "d/e/f", "new\nline/g.md", ""]
    selects = KeyFilter(include, exclude)
    for key in keys:
        wanted = (not include or any(compile_glob(p).fullmatch(key) for p in include)) and not any(
            compile_glob(p).fullmatch(key) for p in exclude if not p.endswith("/")
        )
        assert selects.matches(key) == wanted, (include, exclude, key)


@pytest.mark.parametrize(
    "name", ["a/b.zip", "A.ZIP", "m.mbox", "t.tar.gz", "b.zip/", "b.zip/.", "x/.zip", "a.md"]
)
def test_container_kind_reads_the_last_component(name: str) -> None:
    lower = PurePosixPath(name).name.lower()
    wanted = None
    if lower.endswith(".mbox"):
        wanted = "mbox"
    elif lower.endswith(".zip"):
        wanted = "zip"
    elif lower.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")):
        wanted = "tar"
    assert container_kind(name) == wanted


def test_all_storable_is_every_text_storable() -> None:
    for texts in (["a", "b"], ["a", "b\x00"], ["\ud800", "x"], [], ["\ud83d\ude00"]):
        assert all_storable(texts) == all(map(is_storable, texts)), texts


def test_rows_read_positionally_equal_rows_read_by_name(tmp_path: Path) -> None:
    manifest = Manifest.open(f"sqlite:///{tmp_path / 'm.db'}")
    manifest.ensure_source("s", "filesystem")
    writes = [
        DocumentWrite(
            document_id=f"d{i}",
            source_id="s",
            object_id=f"o{i}",
            locator=f"/r/o{i}",
            title="T",
            media_type=None,
            source_version="1:2",
            checksum="c",
            signature="g",
            pipeline_version="p",
            revision=1,
            sequence=None,
            state="active",
            acl=("group:a", "public") if i else (),
            metadata={"path": f"o{i}", "k": ["x"]},
            last_seen_run=None,
            is_new=True,
        )
        for i in range(3)
    ]
    manifest.commit_batch("run", BatchCommit(writes=writes))
    ids = [f"o{i}" for i in range(3)] + ["missing"]
    by_name = {}
    with manifest.engine.connect() as conn:
        for row in conn.execute(select(t.documents)):
            by_name[row.object_id] = DocumentRecord.from_row(row)
    assert manifest.documents_by_object_ids("s", ids) == by_name
    fields = manifest.fields_by_object_ids("s", ids)
    assert set(fields) == set(by_name)
    for object_id, record in by_name.items():
        assert type(fields[object_id]) is DocumentFields
        names = [f.name for f in dataclasses.fields(DocumentFields)]
        assert {n: getattr(fields[object_id], n) for n in names} == {
            n: getattr(record, n) for n in names
        }
    manifest.close()
