"""Round-trip cases for SaaS connectors and blob stores (issue 29, goal 3): each fills
its fake (``tests/fakes/<name>``, written from the vendor's documentation: jira, dropbox,
sharepoint) or its real emulator (Azurite for azure_blob, fake-gcs-server for gcs) with
the N items of ``roundtrip_run`` and deletes, edits and re-permissions 5 % of them the
way the vendor would report it. N is read here once (``item_count``): 500 in CI, or
``HEADWATER_ROUNDTRIP_ITEMS`` (``bench/roundtrip.py`` runs the cases at 10,000); every
other figure of the round trip derives from it.

A case knows only its source: the test owns the shape (sync, mutate, re-sync, exact
counts). ``reader`` is who may read every item before the ACL step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from azure_support import Azurite
from gcs_support import GcsServer

from fakes.dropbox import FakeDropbox
from fakes.jira import FakeJira
from fakes.sharepoint import SITE, FakeGraph, user_grant
from fakes.sharepoint import TOKEN as GRAPH_TOKEN
from headwater.connectors.azure_blob._auth import DEV_KEY


def item_count() -> int:
    """The round trip's item count: ``HEADWATER_ROUNDTRIP_ITEMS``, 500 (CI) unless set.
    A positive multiple of 20, so that every 5 % slice (``range(k, N, 20)``) holds exactly
    N // 20 items."""
    n = int(os.environ.get("HEADWATER_ROUNDTRIP_ITEMS", "500"))
    if n <= 0 or n % 20:
        raise ValueError(f"HEADWATER_ROUNDTRIP_ITEMS={n}: not a positive multiple of 20")
    return n


N = item_count()
STAFF = "staff"
NEW_READER = "ann@example.com"
OLD_READER = "kim@example.com"  # the reader of the connectors whose ACLs name users


def text_of(i: int, edited: bool = False) -> str:
    """A short text with a word only item ``i`` holds (keyword search finds exactly it)."""
    tail = " It was edited today." if edited else ""
    return f"# Item {i}\n\nItem {i} carries the marker mk{i:04d}x.{tail}\n"


def body_of(i: int, edited: bool = False) -> str:
    """``text_of`` without its heading: the body of an item that has a title of its own."""
    return text_of(i, edited).split("\n\n", 1)[1].strip()


@dataclass
class JiraCase:
    """The fake Jira site: one project that a group may browse; the ACL step puts 5 % of
    the issues under a security level only ``NEW_READER`` is in (the issue's ``updated``
    moves, as Jira's does when its security level is set)."""

    site: FakeJira
    per_object_acl: bool = True
    reader: dict[str, Any] = field(default_factory=lambda: {"groups": ["src:group:g1"]})
    ids: dict[int, str] = field(default_factory=dict)

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "jira"\nbase_url = "{self.site.url}"\n'
            f'email = "{self.site.user}"\napi_token = "{self.site.token}"\n'
            'projects = ["ENG"]\npage_size = 100\nretry_initial_wait = 0.0\n'
        )

    def object_id(self, i: int) -> str:
        return self.ids[i]

    def load(self) -> None:
        self.site.users.update({"acc-kim": OLD_READER, "acc-ann": NEW_READER})
        self.site.groups["g1"] = ("staff", ["acc-kim"])
        self.site.add_project("ENG", [{"type": "group", "parameter": "staff", "value": "g1"}])
        self.site.levels["10100"] = [{"type": "user", "parameter": "acc-ann"}]
        for i in range(N):
            self.ids[i] = self.site.add("ENG", f"Item {i}", body_of(i))

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            del self.site.issues[self.ids[i]]
        for i in edited:
            self.site.touch(self.ids[i], description=body_of(i, True))
        for i in regranted:
            self.site.touch(self.ids[i], security="10100")


@dataclass
class DropboxCase:
    """The fake Dropbox API: N files in one folder of the token's owner (a file's ACL is
    its shared folder's, so there is no per-object ACL to change)."""

    dbx: FakeDropbox
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"user": "owner@example.com"})

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "dropbox"\napi_url = "{self.dbx.url}"\n'
            f'content_url = "{self.dbx.url}"\ntoken = "{self.dbx.token}"\npath = "/Docs"\n'
            "page_size = 200\nretry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"/docs/item-{i:04d}.md"  # the connector's id: the lower-cased path

    def load(self) -> None:
        for i in range(N):
            self.dbx.put(f"/Docs/item-{i:04d}.md", text_of(i).encode())

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.dbx.delete(self.object_id(i))
        for i in edited:
            self.dbx.put(f"/Docs/item-{i:04d}.md", text_of(i, True).encode())


class BlobStore(Protocol):
    """Azurite's and fake-gcs-server's helpers: what fills a container or bucket."""

    def put(self, bucket: str, key: str, body: str, content_type: str = ...) -> None: ...

    def delete(self, bucket: str, key: str) -> None: ...


@dataclass
class BlobCase:
    """A real emulator of a blob store (Azurite for ``azure_blob``, fake-gcs-server for
    ``gcs``): N blobs in a fresh container; the ACL is the source's ``access``."""

    store: BlobStore
    bucket: str
    source_keys: str  # the [[source]] keys that say where the blobs are
    per_object_acl: bool = False

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\n{self.source_keys}page_size = 200\n'
            f'access = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return f"items/{i:04d}.md"

    def load(self) -> None:
        for i in range(N):
            self.store.put(self.bucket, self.object_id(i), text_of(i), "text/markdown")

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.store.delete(self.bucket, self.object_id(i))
        for i in edited:
            self.store.put(self.bucket, self.object_id(i), text_of(i, True), "text/markdown")


def azure_blob_case(azurite: Azurite) -> BlobCase:
    """Azurite with the development account's key."""
    container = azurite.container()
    keys = (
        f'type = "azure_blob"\ncontainer = "{container}"\naccount_url = "{azurite.url}"\n'
        f'account_key = "{DEV_KEY}"\n'
    )
    return BlobCase(azurite, container, keys)


def gcs_case(server: GcsServer) -> BlobCase:
    """fake-gcs-server, read anonymously."""
    bucket = server.bucket()
    keys = f'type = "gcs"\nbucket = "{bucket}"\nendpoint_url = "{server.url}"\nanonymous = true\n'
    return BlobCase(server, bucket, keys)


@dataclass
class SharepointCase:
    """The fake Microsoft Graph: N files in one document library, each shared with one
    user; the ACL step replaces 5 % of the files' permissions (delta reports them with
    ``sharedChanged``), edits and deletes arrive through delta too."""

    graph: FakeGraph
    per_object_acl: bool = True
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "sharepoint"\nbase_url = "{self.graph.url}/v1.0"\n'
            f'token = "{GRAPH_TOKEN}"\nsite = "{SITE}"\npage_size = 200\n'
            "retry_initial_wait = 0.01\n"
        )

    def object_id(self, i: int) -> str:
        return f"lib1/i{i:04d}"

    def load(self) -> None:
        for i in range(N):
            self.graph.put(
                "lib1", f"i{i:04d}", f"item-{i:04d}.md", text_of(i), readers=(OLD_READER,)
            )

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.graph.delete("lib1", f"i{i:04d}")
        for i in edited:
            self.graph.put("lib1", f"i{i:04d}", f"item-{i:04d}.md", text_of(i, True))
        for i in regranted:
            self.graph.share("lib1", f"i{i:04d}", [user_grant(NEW_READER)])
