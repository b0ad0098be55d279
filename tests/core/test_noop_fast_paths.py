"""The no-op re-sync's fast paths give exactly what the general code gives.

Each shortcut taken for speed (``bench/noop.py``, docs/performance.md "No-op at scale")
is checked against the slower form it replaced, on the awkward inputs: names with quotes,
backslashes, non-ASCII and undecodable bytes; globs with and without excludes; rows read
positionally against rows read by name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import pytest
from sqlalchemy import select

from headwater.connectors.filesystem import FilesystemConnector, FilesystemOptions
from headwater.connectors.filesystem._items import _after_cursor
from headwater.connectors.filesystem._read import fetch_ref
from headwater.connectors.globs import KeyFilter, compile_glob
from headwater.connectors.names import all_storable, is_storable
from headwater.manifest import schema as t
from headwater.manifest.records import BatchCommit, DocumentFields, DocumentRecord
from headwater.manifest.store import Manifest
from headwater.pipeline.parse._members import container_kind
from headwater.sync.decisions import signature_of
from headwater.sync.settings import distinct_parts
from headwater.sync.storable import storable_item
from headwater.types import Checkpoint, SourceDocument, SourceItem, Window
from manifest_rows import document_write

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


CONTAINER_SUFFIXES = {".mbox": "mbox", ".zip": "zip"} | dict.fromkeys(
    (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz"), "tar"
)


def _container_kind_in_full(name: str) -> str | None:
    lower = PurePosixPath(name).name.lower()
    return next((kind for end, kind in CONTAINER_SUFFIXES.items() if lower.endswith(end)), None)


@pytest.mark.parametrize(
    "name",
    ["a/b.zip", "A.ZIP", "m.mbox", "t.tar.gz", "b.zip/", "b.zip/.", "x/.zip", "a.md", "", "."]
    + [f"d/n{end.upper()}" for end in CONTAINER_SUFFIXES]
    + [f"d/n{end[:-1]}{end[-1].upper()}" for end in CONTAINER_SUFFIXES]
    + [f"n{end}x" for end in CONTAINER_SUFFIXES],
)
def test_container_kind_reads_the_last_component(name: str) -> None:
    assert container_kind(name) == _container_kind_in_full(name)


def test_container_kind_answers_at_once_only_for_endings_no_container_has() -> None:
    """Its first test is the name's last character: no character outside the ones it
    lets through ends a container's suffix once lowered, in all of Unicode."""
    through = {c for end in CONTAINER_SUFFIXES for c in (end[-1], end[-1].upper())} | {"/", "."}
    endings = {end[-1] for end in CONTAINER_SUFFIXES} | {"/", "."}
    for point in range(0x110000):
        character = chr(point)
        lowered = character.lower()
        if character not in through and lowered and lowered[-1] in endings:
            raise AssertionError(f"U+{point:04X} lowers to {lowered!r}, a container's ending")
        if character not in through and point % 4099 == 0:
            assert container_kind(f"d/x{character}") == _container_kind_in_full(f"d/x{character}")


def test_all_storable_is_every_text_storable() -> None:
    for texts in (["a", "b"], ["a", "b\x00"], ["\ud800", "x"], [], ["\ud83d\ude00"]):
        assert all_storable(texts) == all(map(is_storable, texts)), texts


def test_rows_read_positionally_equal_rows_read_by_name(tmp_path: Path) -> None:
    manifest = Manifest.open(f"sqlite:///{tmp_path / 'm.db'}")
    manifest.ensure_source("s", "filesystem")
    writes = [
        document_write(
            f"o{i}",
            i,
            document_id=f"d{i}",
            source_version="1:2",
            acl=("group:a", "public") if i else (),
            metadata={"path": f"o{i}", "k": ["x"]},
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


AWKWARD = ["a", 'q"uote', "back\\slash", "é日本", "tab\there", "line\nbreak", "\u2028", ""]


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"path": "a/b.md", "hierarchy": "a/b.md"},
        {name: name for name in AWKWARD},
        {"z": ["x", 'y"', "é"], "a": [], "m": "v"},
        {"n": 1},  # not a string: the encoder's own form
        {"t": ("a", "b")},
        {"none": None},
        {"k": ["a", 2]},
    ],
)
def test_the_signature_is_the_sha256_of_the_sorted_json(metadata: dict[str, object]) -> None:
    for title, locator in (("T", "/r/a.md"), ('q"é\\', "/r/日本\t.md"), ("", "")):
        payload = json.dumps(["c" * 64, title, locator, metadata], sort_keys=True)
        wanted = hashlib.sha256(payload.encode()).hexdigest()
        assert signature_of("c" * 64, title, locator, metadata) == wanted  # type: ignore[arg-type]


def test_a_listed_file_is_the_document_and_checkpoint_the_constructors_make(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    for rel in ["a.md", 'q"d/b.md', "é/日本.txt", "d/e/f/g.md", "back\\slash/x.md"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    big = root / "big.md"
    big.write_text("x" * 100)
    connector = FilesystemConnector(FilesystemOptions(root=str(root), max_file_bytes=50))
    items = list(connector.read(Window(None, None), None, lambda _: None))
    docs = [i for i in items if isinstance(i, SourceDocument)]
    points = [i for i in items if isinstance(i, Checkpoint)]
    assert len(docs) == len(points) == 6
    for doc, point in zip(docs, points, strict=True):
        st = (root / doc.object_id).stat()
        path = doc.object_id
        made = SourceDocument(
            object_id=path,
            locator=str(root.resolve().joinpath(*path.split("/"))),
            title="",
            version=f"{st.st_mtime_ns}:{st.st_size}",
            fetch_ref=json.dumps({"path": path, "file": [st.st_dev, st.st_ino]}),
            updated_at=datetime.fromtimestamp(st.st_mtime, UTC),
            metadata={"path": path, "hierarchy": path}
            | ({"size": str(st.st_size)} if st.st_size > 50 else {}),
            size=st.st_size,
        )
        assert type(doc) is SourceDocument and doc == made and vars(doc) == vars(made)
        assert type(point) is Checkpoint
        assert point == Checkpoint(json.dumps({"after": path.split("/")}))
    assert [d.object_id for d in docs] == sorted(
        (d.object_id for d in docs), key=lambda p: p.split("/")
    )


@pytest.mark.parametrize(
    ("text", "storable"),
    [("plain", True), ("nul\x00", False), ("é日本", True), ("\ud800", False), ("\U0001f600", True),
     ("\ud83d\ude00", False)],  # two lone surrogates, not the pair's emoji
)  # fmt: skip
def test_storable_passes_an_item_as_it_is_only_when_all_its_text_is(
    text: str, storable: bool
) -> None:
    for where in ("object_id", "title", "locator", "metadata"):
        values: dict[str, object] = {"object_id": "o", "locator": "l", "title": "t"}
        values["version"] = "1"
        values[where] = {"k": text} if where == "metadata" else text
        item = SourceDocument(**values)  # type: ignore[arg-type]
        assert (storable_item(item) is item) == storable, (where, text)


@pytest.mark.parametrize(
    "ids", [[], ["a"], ["a", "b", "c"], ["a", "b", "a"], ["a", "a", "a"], ["a", "b", "b", "a"]]
)
def test_distinct_parts_split_only_where_an_object_comes_again(ids: list[str]) -> None:
    docs = [SourceDocument(object_id=o, locator=o, title=o, version="1") for o in ids]
    items: list[SourceItem] = list(docs)
    parts = list(distinct_parts(items))
    assert [i for part in parts for i in part] == items  # nothing lost, nothing reordered
    for part in parts:
        assert len({getattr(i, "object_id", None) for i in part}) == len(part)
    assert len(parts) == (0 if not ids else 1 + _splits(ids))


def _splits(ids: list[str]) -> int:
    """Where the general loop (one set per part) starts a new part."""
    splits, seen = 0, set[str]()
    for object_id in ids:
        if object_id in seen:
            splits, seen = splits + 1, set()
        seen.add(object_id)
    return splits


def test_a_document_built_from_its_fields_is_the_constructors() -> None:
    values: dict[str, object] = {
        f.name: f"{f.name}-value" for f in dataclasses.fields(SourceDocument)
    }
    made = SourceDocument.of(values)
    built = SourceDocument(**values)  # type: ignore[arg-type]
    assert type(made) is SourceDocument and made == built and vars(made) == vars(built)
    assert hash(made.object_id) == hash(built.object_id)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.title = "another"  # type: ignore[misc]
