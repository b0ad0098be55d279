"""A test connector whose documents carry one ACL each, with group and ACL listings.

``acl`` sources keep their state in ``STATE`` by the source's ``name`` option: the
documents (object id → ACL), group memberships, and counters of content reads and of
ACL listings, so a test can tell a permission-only sync (listings, no reads) from a
content sync. Shared by the group-sync and the scheduler's permission tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.types import Access, KnownVersions, ListedGroup, SourceDocument, Window


@dataclass
class AclSource:
    docs: dict[str, Access] = field(default_factory=dict)  # object id -> ACL
    members: dict[str, list[str]] = field(default_factory=dict)  # group principal -> emails
    # group principal -> (display name, mail); a group without labels is listed as a pair
    labels: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    nested: dict[str, list[str]] = field(default_factory=dict)  # group -> groups nested in it
    reads: int = 0  # documents whose content was read
    listings: int = 0  # calls of permissions()
    groups_fail: bool = False


STATE: dict[str, AclSource] = {}


class AclOptions(ConnectorOptions):
    name: str


class AclConnector:
    type_name: ClassVar[str] = "acl"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[AclOptions]] = AclOptions

    def __init__(self, options: AclOptions, context: SourceContext | None = None) -> None:
        self.state = STATE.setdefault(options.name, AclSource())

    def validate(self) -> None:
        return None

    def read(self, window: Window, checkpoint: object, known: KnownVersions) -> ReadStream:
        for object_id, access in sorted(self.state.docs.items()):
            self.state.reads += 1
            yield SourceDocument(
                object_id=object_id,
                locator=f"acl://{object_id}",
                title=object_id,
                version="v1",
                content=f"quarterly budget report {object_id}".encode(),
                media_type="text/plain",
                access=access,
            )
        return None

    def groups(self) -> Iterator[tuple[str, list[str]]]:
        if self.state.groups_fail:
            raise RuntimeError("the directory is down")
        for group, members in sorted(self.state.members.items()):
            if group in self.state.labels or group in self.state.nested:
                name, mail = self.state.labels.get(group, (None, None))
                yield ListedGroup(group, members, name, mail, self.state.nested.get(group, ()))
            else:
                yield group, members

    def permissions(self) -> Iterator[tuple[str, Access]]:
        self.state.listings += 1
        yield from sorted(self.state.docs.items())
