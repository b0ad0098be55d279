"""The no-op's manifest reads give exactly what the plain forms give, on both databases.

A part of ids is bound as one value (``manifest.lookups.in_ids``: a JSON array for
SQLite's ``json_each``, an array for PostgreSQL's ``= ANY``), so each awkward id (quotes,
backslashes, non-ASCII, control characters, more ids than one part) must find exactly its
row; and a row's metadata stays JSON until read (``StoredMetadata``), so every question
asked of it must answer as the decoded object would.
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event
from sqlalchemy.exc import DatabaseError

from headwater.manifest.lookups import rows_by_object_ids
from headwater.manifest.prunes import CHUNK
from headwater.manifest.records import (
    BatchCommit,
    FailureWrite,
    StoredMetadata,
)
from headwater.manifest.store import Manifest
from manifest_rows import document_write

IDS = ["a.md", 'q"uote', "back\\slash", "é/日本.txt", "tab\there", "line\nbreak", "%_like", ""]


def test_rows_and_dead_failures_are_found_by_exactly_their_ids(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("s", "filesystem")
        object_ids = IDS + [f"n{i:05d}" for i in range(CHUNK + 10)]  # more than one part
        writes = [document_write(o, n) for n, o in enumerate(object_ids)]
        dead = [
            FailureWrite("s", w.object_id, w.document_id, w.locator, "fetch", "corrupt", "m",
                         "p", w.source_version, None, permanent=True)
            for w in writes[: len(IDS)]
        ]  # fmt: skip
        manifest.commit_batch("run", BatchCommit(writes=writes, failures=dead))
        asked = [*object_ids, "missing", "A.MD", "q'uote"]
        found = manifest.fields_by_object_ids("s", asked)
        assert sorted(found) == sorted(object_ids)
        for write in writes:
            assert found[write.object_id].document_id == write.document_id
            assert found[write.object_id].source_version == write.source_version
        assert manifest.fields_by_object_ids("other", object_ids) == {}
        doc_ids = [w.document_id for w in writes] + ["nope"]
        versions = manifest.failures.dead_source_versions(doc_ids)
        assert versions == {w.document_id: (w.source_version, "p") for w in writes[: len(IDS)]}
        # asked with its source: the same, after one probe for any dead entry of it
        assert manifest.failures.dead_source_versions(doc_ids, "s") == versions
        manifest.ensure_source("quiet", "filesystem")
        assert manifest.failures.dead_source_versions(["nope"], "quiet") == {}
    finally:
        manifest.close()


def test_ids_close_together_or_far_apart_find_exactly_their_rows(manifest_url: str) -> None:
    """On SQLite a part of ids is read as one range of the index when the range holds
    about as many rows (``lookups._rows_in_range``), and id by id when it holds many more;
    either way exactly the rows asked come back: none of the others in the range, none of
    another source's, each id's own."""
    walked = [f"d{n // 100:02d}/f{n:04d}.md" for n in range(1200)]
    numbers = [str(n) for n in range(1, 900)]  # "1" … "899" span nearly everything
    object_ids = walked + numbers + IDS + ["😀", "\uffff", "é/a"]
    manifest = Manifest.open(manifest_url)
    statements: list[str] = []
    try:
        for source in ("s", "other"):
            manifest.ensure_source(source, "filesystem")
            writes = [replace(document_write(o, n), source_id=source, document_id=f"{source}{n}")
                      for n, o in enumerate(object_ids)]  # fmt: skip
            manifest.commit_batch("run", BatchCommit(writes=writes))
        event.listen(manifest.engine, "before_cursor_execute", _record(statements))
        rng = random.Random(7)
        asks = {
            "a walk's part": walked[100:600],
            "every other": walked[::2],
            "every tenth": walked[::10],  # the range holds 10× the ids: id by id
            "numbers": numbers,
            "awkward": [*IDS, "😀", "é/a", "missing", "d05/f0550.mdx"],
            "a sample": rng.sample(object_ids, 700),
        }
        for name, asked in asks.items():
            statements.clear()
            columns = ["document_id", "object_id"]
            rows = list(rows_by_object_ids(manifest.engine, "s", asked, columns, listed=True))
            wanted = sorted(
                ("s" + str(object_ids.index(o)), o) for o in set(asked) & set(object_ids)
            )
            assert sorted(rows) == wanted, name
            if manifest.engine.dialect.name == "sqlite":
                ranged = [">=" in s for s in statements if "FROM documents" in s]
                if name == "a walk's part":
                    assert all(ranged), "a part in the index's order is read as a range"
                if name == "every tenth":
                    assert not any(ranged[1:]), "ids far apart are looked up id by id"
    finally:
        manifest.close()


def _record(statements: list[str]) -> Any:
    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    return before


TEXTS = [
    "{}",
    '{"path": "a"}',
    '{"content": "unavailable", "path": "x"}',
    '{"path": "content"}',  # the key's name in a value only
    '{"from": ["a@b"], "subject": "s", "x_y": "1"}',
    '{"\\u00e9": "1", "q\\"k": "2", "": "3"}',
    '{"content":"compact"}',
    json.dumps({"é": "ascii-escaped"}),
    json.dumps({"é": "raw"}, ensure_ascii=False),
]
KEYS = ["content", "path", "from", "subject", "x_y", "é", 'q"k', "", "missing", "con", 1]


@pytest.mark.parametrize("text", TEXTS)
def test_stored_metadata_answers_as_the_decoded_object(text: str) -> None:
    stored, plain = StoredMetadata(text), json.loads(text)
    for key in KEYS:
        assert (key in stored) == (key in plain), key
        assert stored.get(key) == plain.get(key), key  # type: ignore[call-overload]
        assert stored.get(key, "d") == plain.get(key, "d"), key  # type: ignore[call-overload]
        if key in plain:
            assert stored[key] == plain[key]  # type: ignore[index]
        else:
            with pytest.raises(KeyError):
                stored[key]  # type: ignore[index]
    assert stored == plain and plain == stored and dict(stored) == plain
    assert list(stored) == list(plain) and len(stored) == len(plain)
    assert stored == StoredMetadata(text) and stored != {"other": "x"}


@pytest.mark.parametrize("text", TEXTS)
def test_may_hold_any_is_false_only_when_none_is_held(text: str) -> None:
    stored, plain = StoredMetadata(text), json.loads(text)
    for keys in (["from", "to"], ["content"], ["con"], ["path", "x"], ["é"], ['q"k', "zz"]):
        if not stored.may_hold_any(frozenset(keys)):
            assert not any(key in plain for key in keys), keys
    assert not StoredMetadata('{"a": "b"}').may_hold_any(frozenset({"from", "subject"}))


class _FetchFails(sqlite3.Cursor):
    """A cursor whose ``fetchall`` fails as a damaged page would, ``fails`` more times."""

    fails = 0

    def fetchall(self) -> list[Any]:
        if _FetchFails.fails:
            _FetchFails.fails -= 1
            raise sqlite3.DatabaseError("database disk image is malformed")
        return super().fetchall()


class _Connection(sqlite3.Connection):
    def cursor(self, factory: Any = _FetchFails) -> Any:  # type: ignore[override]
        return super().cursor(factory)


def test_a_driver_error_while_fetching_rows_is_raised_as_sqlalchemy_raises_it(
    tmp_path: Path,
) -> None:
    """The gates' lookup fetches the driver's tuples itself (``lookups._driver_rows``); a
    driver error there is fetched once more through SQLAlchemy: rows if it was passing,
    SQLAlchemy's own error (which the manifest's error handlers name) if it stays."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    manifest = Manifest.open(url)
    try:
        manifest.ensure_source("s", "filesystem")
        writes = [document_write(o, n) for n, o in enumerate(IDS)]
        manifest.commit_batch("run", BatchCommit(writes=writes))
    finally:
        manifest.close()
    engine = create_engine(url, connect_args={"factory": _Connection})
    try:
        _FetchFails.fails = 1
        rows = list(rows_by_object_ids(engine, "s", IDS, ["object_id", "source_version"]))
        assert sorted(rows) == sorted((w.object_id, w.source_version) for w in writes)
        assert _FetchFails.fails == 0
        _FetchFails.fails = 2
        with pytest.raises(DatabaseError, match="malformed"):
            list(rows_by_object_ids(engine, "s", IDS, ["object_id"]))
    finally:
        _FetchFails.fails = 0
        engine.dispose()
