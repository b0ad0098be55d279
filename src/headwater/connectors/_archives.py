"""Container files (mbox mailboxes, zip and tar archives) read as many documents.

A connector that finds a container file hands its bytes here and yields what comes
back instead of one document: a ``SourceDocument`` per member, with the object id
``<file's id>!/<member path>`` and the member's bytes inline (the version hint is a hash
of them, so an unchanged member is skipped by the hint), and a ``Failure`` per member
that is not read (carrying what is known of the member, so the sync indexes it as a
metadata-only document). A container that cannot be opened, or is past a whole-container
limit, is one failure whose id, ``<file's id>!/``, is a prefix: every member the
manifest holds from before counts as present, so a damaged archive deletes nothing.
Members that leave the container are deleted by the source's usual prune.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime

from headwater.errors import ItemError
from headwater.pipeline.parse import (
    SEPARATOR,
    ContainerLimits,
    MemberFailure,
    container_kind,
    members,
)
from headwater.types import Failure, MetadataValue, SourceDocument, Stage

__all__ = ["container_id", "container_items", "container_kind", "member_ids"]


def container_id(object_id: str) -> str:
    """The id of the file that holds ``object_id`` (itself when it is no member)."""
    return object_id.split(SEPARATOR, 1)[0]


def container_items(
    content: bytes,
    *,
    object_id: str,
    locator: str,
    updated_at: datetime | None,
    metadata: Mapping[str, MetadataValue],
    limits: ContainerLimits | None = None,
    container: SourceDocument | None = None,
) -> Iterator[SourceDocument | Failure]:
    """The members of the container file ``object_id`` as documents and failures; a
    failure of the whole carries ``container`` (the file as listed) for its stand-in."""
    try:
        for found in members(content, object_id, limits):
            member_id = f"{object_id}{SEPARATOR}{found.path}"
            where = f"{locator}{SEPARATOR}{found.path}"
            known = {**metadata, "path": member_id, "container": object_id}
            if isinstance(found, MemberFailure):
                yield Failure(
                    object_id=member_id,
                    locator=where,
                    stage=Stage.FETCH.value,
                    error_class=found.error.error_class,
                    message=str(found.error),
                    permanent=True,
                    # what is known of it: indexed by its name, flagged "unavailable"
                    document=SourceDocument(
                        object_id=member_id,
                        locator=where,
                        title="",
                        version=f"unread:{found.size}",
                        updated_at=updated_at,
                        metadata=known,
                        size=found.size,
                    ),
                )
                continue
            yield SourceDocument(
                object_id=member_id,
                locator=where,
                title="",
                version=found.version,
                content=found.content,
                media_type=found.media_type,
                updated_at=updated_at,
                metadata=known,
            )
    except ItemError as exc:
        yield whole_failure(object_id, locator, exc, container)


def whole_failure(
    object_id: str, locator: str, exc: ItemError, container: SourceDocument | None = None
) -> Failure:
    """The failure of a container read as a whole: a prefix over its members, and the
    container file (when given) as a metadata-only document findable by its name."""
    return Failure(
        object_id=f"{object_id}{SEPARATOR}",
        locator=locator,
        stage=Stage.FETCH.value,
        error_class=exc.error_class,
        message=(
            f"{exc} The members of {object_id!r} indexed before are kept until it can be "
            "read again."
        ),
        permanent=exc.permanent,
        prefix=True,
        document=container,
    )


def member_ids(
    content: bytes, object_id: str, limits: ContainerLimits | None = None
) -> Iterator[str]:
    """The member ids of a container (raises ``ItemError`` when it cannot be listed)."""
    for found in members(content, object_id, limits):
        yield f"{object_id}{SEPARATOR}{found.path}"
