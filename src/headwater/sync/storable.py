"""Make each item a connector yields storable before it reaches the manifest.

Connectors hand over strings from outside: JSON holding a lone surrogate escape
(``"\\ud800"``, common in chat and wiki APIs that cut an emoji in half), rows holding NUL
characters, titles with control characters. SQLite and PostgreSQL refuse a lone surrogate
and PostgreSQL refuses NUL, so one such value used to fail its whole batch's commit, and
with it every later run of the source. Here each item is made storable on its own:

- text that only describes an object (title, locator, version hint, media type,
  metadata keys and values) gets U+FFFD for each lone surrogate and loses its NULs, the
  way undecodable bytes in content become U+FFFD when it is parsed;
- an object id (an identity: two ids must never collapse into one) or a fetch reference
  that cannot be stored makes the item a permanent failure record under the id's escaped
  form (``names.printable``), so the rest of the source syncs and the failure says which
  object it was;
- a delete of such an id is dropped: the manifest cannot hold the id, so it holds no
  document to delete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from headwater.connectors.names import all_storable, is_storable, printable, storable
from headwater.types import Deleted, Failure, MetadataValue, SourceDocument, Stage

__all__ = ["storable_item"]


def storable_item(
    item: SourceDocument | Deleted | Failure,
) -> SourceDocument | Deleted | Failure | None:
    """``item`` with its text made storable; a failure for an id that cannot be stored;
    None for a delete of such an id."""
    if isinstance(item, Deleted):
        return item if is_storable(item.object_id) else None
    if isinstance(item, Failure):
        return replace(
            item,
            object_id=printable(item.object_id),
            locator=storable(item.locator),
            stage=storable(item.stage),
            error_class=storable(item.error_class),
            message=storable(item.message),
        )
    joined = "".join(_texts_of(item))
    if (joined.isascii() and "\x00" not in joined) or all_storable((joined,)):
        return item  # the usual case, checked at once (ASCII holds no surrogate): no copy
    if not (is_storable(item.object_id) and is_storable(item.fetch_ref)):
        which = "object id" if not is_storable(item.object_id) else "fetch reference"
        return Failure(
            object_id=printable(item.object_id),
            locator=storable(item.locator),
            stage=Stage.FETCH,
            error_class="unstorable_id",
            message=(
                f"the connector gave the {which} {printable(item.fetch_ref or item.object_id)!r}"
                ", which holds a NUL or a lone surrogate (text that is not valid Unicode) and "
                "cannot be stored; expected valid Unicode text. Rename the object in the "
                "source, or exclude it in the source's configuration."
            ),
            permanent=True,
        )
    texts = (item.locator, item.title, item.version, item.media_type)
    if all(map(is_storable, texts)) and _metadata_storable(item.metadata):
        return item  # the usual case: nothing to copy
    return replace(
        item,
        locator=storable(item.locator),
        title=storable(item.title),
        version=storable(item.version),
        media_type=None if item.media_type is None else storable(item.media_type),
        metadata=_metadata(item.metadata),
    )


def _texts_of(item: SourceDocument) -> list[str]:
    """Every text of ``item`` that is stored: ids, descriptions, metadata keys and values."""
    texts = [item.object_id, item.fetch_ref or "", item.locator, item.title, item.version]
    texts.append(item.media_type or "")
    for key, value in item.metadata.items():
        texts.append(key)
        if isinstance(value, str):
            texts.append(value)
        else:
            texts.extend(value)
    return texts


def _metadata_storable(metadata: Mapping[str, MetadataValue]) -> bool:
    return all(is_storable(k) and _values_storable(v) for k, v in metadata.items())


def _metadata(metadata: Mapping[str, MetadataValue]) -> Mapping[str, MetadataValue]:
    if _metadata_storable(metadata):
        return metadata
    return {
        storable(key): storable(value) if isinstance(value, str) else [storable(v) for v in value]
        for key, value in metadata.items()
    }


def _values_storable(value: MetadataValue) -> bool:
    return is_storable(value) if isinstance(value, str) else all(map(is_storable, value))
