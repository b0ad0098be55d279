"""Text no manifest can store, from a connector: one item never fails its source's run.

A lone surrogate (JSON's ``"\\ud800"``) is refused by SQLite and PostgreSQL, and NUL by
PostgreSQL. Before, one such title or metadata value failed the batch's commit, and so
every run of the source, for good. Now descriptive text is cleaned (U+FFFD, NUL dropped)
and an object id that cannot be stored is a permanent failure record under its escaped
form, while everything else syncs.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from headwater import Workspace
from headwater.connectors.base import ConnectorCapabilities, ConnectorOptions, ReadStream
from headwater.sync.storable import storable_item
from headwater.types import Access, Deleted, Failure, KnownVersions, SourceDocument, Window
from workspace_helpers import write_config

ITEMS: dict[str, list[SourceDocument | Deleted]] = {}


class RawOptions(ConnectorOptions):
    name: str


class RawConnector:
    """Yields whatever the test put in ``ITEMS[name]``, as a careless connector would."""

    type_name: ClassVar[str] = "raw"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(windowed=False)
    Options: ClassVar[type[RawOptions]] = RawOptions

    def __init__(self, options: RawOptions, context: object = None) -> None:
        self.name = options.name

    def validate(self) -> None:
        return None

    def read(self, window: Window, checkpoint: object, known: KnownVersions) -> ReadStream:
        yield from ITEMS[self.name]
        return None


def document(object_id: str, title: str, **metadata: str | list[str]) -> SourceDocument:
    return SourceDocument(
        object_id=object_id,
        locator=f"raw://{object_id}",
        title=title,
        version="v1",
        content=f"quarterly budget report {len(ITEMS)}".encode(),
        media_type="text/plain",
        metadata=metadata,
        access=Access(public=True),
    )


def test_unstorable_text_is_cleaned_and_an_unstorable_id_is_a_failure(
    tmp_path: Path, manifest_url: str
) -> None:
    ITEMS[tmp_path.name] = [
        document("good", "Plain title"),
        document("meta", "Title with \x00 a NUL", tags=["x\ud800y", "ok"], team="a\udc00"),
        document("bad-\udcff", "an id from undecodable bytes"),
        document("nul-\x00-id", "an id with a NUL"),
        Deleted("gone-\ud800"),
    ]
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=f'[[source]]\nid = "raw"\ntype = "raw"\nname = "{tmp_path.name}"\n',
    )
    for attempt in range(2):  # the second run must be as good as the first
        with Workspace.open(config, connector_types={"raw": RawConnector}) as ws:
            [run] = ws.sync().runs
            assert run.status == "completed_with_errors", run.error
            assert run.counts.failed == 2
            assert run.counts.new == (2 if attempt == 0 else 0)
            hits = ws.search("quarterly budget", user="a@x.com", k=10, mode="keyword")
            assert sorted(h["title"] for h in hits) == ["Plain title", "Title with  a NUL"]
            meta = ws.document(source="raw", object_id="meta").as_dict()
            assert meta["metadata"] == {
                "tags": ["x\ufffdy", "ok"],
                "team": "a\ufffd",
            }
            failures = ws.failures()
            assert sorted(f.object_id for f in failures) == ["bad-\\xff", "nul-\\x00-id"]
            assert {f.error_class for f in failures} == {"unstorable_id"}


def test_storable_item_keeps_valid_items_as_they_are() -> None:
    doc = document("é/ü 😀", "Ünïcode 😀 title", tags=["ß", "日本"])
    assert storable_item(doc) is doc
    assert storable_item(Deleted("fine")) == Deleted("fine")


def test_a_failure_from_a_connector_is_made_storable_too() -> None:
    failure = Failure("dir-\udcff", "raw://dir", "enumerate", "os_error", "bad \ud800 \x00")
    cleaned = storable_item(failure)
    assert isinstance(cleaned, Failure)
    assert (cleaned.object_id, cleaned.message) == ("dir-\\xff", "bad \ufffd ")
    assert storable_item(Deleted("gone-\ud800")) is None
