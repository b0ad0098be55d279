"""The rows a connector's version questions read are the rows the flush decides from.

``sync/known.py``: ``KnownVersions.many`` reads the manifest rows of a page of objects
(the columns gate 1 compares) and keeps them; the batch's check of documents held as
listed (``sync/held.py``) takes them instead of reading the same rows again (a no-op of a
SQL table read each row twice). What must hold: the rows are read once per page; a kept
row is given once, so an object listed twice in one run, written by the first listing's
batch, is decided the second time from what that batch wrote, even when it is listed
again as the kept row held it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from sqlalchemy import event

from headwater import Workspace
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
    versions_of,
)
from headwater.sync import known
from headwater.types import Checkpoint, KnownVersions, SourceDocument, Window
from workspace_helpers import write_config

# each page: the (object id, text) it lists; the connector asks of a page's ids, then of
# the next page's, before it yields the first page's checkpoint
PAGES: dict[str, list[list[tuple[str, str]]]] = {}


class PagedOptions(ConnectorOptions):
    name: str


class PagedConnector:
    """Pages of documents, each page's versions asked in one ``many`` as the sql
    connector does, the next page's asked before this page's checkpoint."""

    type_name: ClassVar[str] = "paged"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(windowed=False)
    Options: ClassVar[type[PagedOptions]] = PagedOptions

    always_content: ClassVar[bool] = False  # content even for a version the manifest holds

    def __init__(self, options: PagedOptions, context: SourceContext | None = None) -> None:
        self.pages = PAGES[options.name]

    def validate(self) -> None:
        return None

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        start = json.loads(checkpoint.cursor)["page"] + 1 if checkpoint else 0
        ask = [[i for i, _ in page] for page in self.pages]
        asked = versions_of(known, ask[start]) if start < len(ask) else {}
        for number in range(start, len(self.pages)):
            page = self.pages[number]
            for object_id, text in page:
                yield SourceDocument(
                    object_id=object_id,
                    locator=f"paged://{object_id}",
                    title=object_id,
                    version=text,
                    content=None
                    if asked.get(object_id) == text and not self.always_content
                    else text.encode(),
                    media_type="text/plain",
                )
            if number + 1 < len(self.pages):
                asked = versions_of(known, ask[number + 1])
            yield Checkpoint(json.dumps({"page": number}))
        return None

    def enumerate(self) -> Iterator[str]:
        yield from sorted({i for page in self.pages for i, _ in page})


def _workspace(tmp_path: Path, name: str) -> Path:
    body = (
        f'[[source]]\nid = "paged"\ntype = "paged"\nname = "{name}"\nbatch_size = 1\n'
        "access = { public = true }\n"
    )
    return write_config(tmp_path, manifest_url=None, sources=body)


def _no_op_lookups(tmp_path: Path, name: str, pages: int) -> tuple[int, int]:
    """Pages of 50 unchanged rows synced, then synced again: the second run's unchanged
    count and the statements it ran that read documents rows by a list of ids (bound as
    one JSON array, or as the range of the index they lie in: ``manifest.lookups``)."""
    PAGES[name] = [[(f"p{p}-{n:03}", "v") for n in range(50)] for p in range(pages)]
    config = _workspace(tmp_path, name)
    seen: list[int] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        by_ids = "json_each" in statement or "documents.object_id >=" in statement
        if "FROM documents" in statement and by_ids:
            seen.append(1)

    with Workspace.open(config, connector_types={"paged": PagedConnector}) as ws:
        ws.sync(index=False)
        event.listen(ws.manifest.engine, "before_cursor_execute", count)
        report = ws.sync(index=False)
    return report.runs[0].counts.unchanged, len(seen)


class ContentAlways(PagedConnector):
    always_content = True


def test_an_object_listed_twice_is_decided_from_what_its_first_batch_wrote(
    tmp_path: Path,
) -> None:
    PAGES["twice"] = [[("a", "one"), ("b", "one")]]
    config = _workspace(tmp_path, "twice")
    with Workspace.open(config, connector_types={"paged": ContentAlways}) as ws:
        ws.sync(index=False)
        # "a" changes on page 0 and back on page 1; page 1's versions are asked (and its
        # row read, at "one") before page 0's batch writes "a" at "two"
        PAGES["twice"] = [[("a", "two"), ("b", "one")], [("a", "one")]]
        report = ws.sync(index=False)
        row = ws.document(source="paged", object_id="a")
    assert report.runs[0].counts.changed == 2
    assert row["source_version"] == "one"
    assert row["revision"] == 3


def test_a_no_op_reads_each_page_of_rows_once(tmp_path: Path) -> None:
    unchanged, lookups = _no_op_lookups(tmp_path, "once", pages=4)
    assert unchanged == 200
    assert lookups == 4  # one read of each page's rows, by the connector's question


def test_a_page_larger_than_what_is_kept_is_read_again_at_the_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(known, "KEPT", 30)  # a page of 50 is more than is kept
    held: list[int] = []
    many = known.ManifestVersions.many

    def counting(self: known.ManifestVersions, object_ids: Sequence[str]) -> object:
        answer = many(self, object_ids)
        held.append(len(self._read))  # what stays in memory after the question
        return answer

    monkeypatch.setattr(known.ManifestVersions, "many", counting)
    unchanged, lookups = _no_op_lookups(tmp_path, "large", pages=2)
    assert unchanged == 100  # the same decisions
    assert lookups > 2  # the connector's two reads, then the check's own
    assert held and max(held) <= 30
