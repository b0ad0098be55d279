"""The two indexes of a generation, created with their settings and verified on open.

The chunk index needs ``document_id``, ``acl``, ``source_key``, ``scope_key`` and
``write`` filterable (ACL, source and scope filters run inside the search), ``text`` and ``title``
searchable, and a ``userProvided`` embedder named ``default`` of the model's dimension
(https://www.meilisearch.com/docs/reference/api/settings). The revisions index needs
``document_id`` and ``deleted`` filterable and ``document_id`` sortable (the inventory
lists records in ``document_id`` order, which needs Meilisearch 1.16 or newer).

A missing index is created and its settings applied; an index that lacks one of these
settings (e.g. a creation that died before its settings task) gets them applied again.
Settings Headwater cannot change without losing data, the primary key or an embedder
``default`` of another source or dimension, are a ``ConfigError`` naming the setting and
the fix; so is any setting the server still reports differently after it was applied.
"""

from __future__ import annotations

from typing import Any

from headwater.errors import ConfigError
from headwater.sinks.meilisearch._client import MeiliApi, MeilisearchError
from headwater.sinks.meilisearch._options import EMBEDDER

CHUNK_FILTERABLE = ("document_id", "acl", "source_key", "scope_key", "write")
SEARCHABLE = ("text", "title")
RECORD_FILTERABLE = ("document_id", "deleted")
RECORD_SORTABLE = ("document_id",)


def chunk_settings(dimension: int) -> dict[str, Any]:
    return {
        "filterableAttributes": list(CHUNK_FILTERABLE),
        "searchableAttributes": list(SEARCHABLE),
        "displayedAttributes": ["*"],
        "embedders": {EMBEDDER: {"source": "userProvided", "dimensions": dimension}},
    }


def record_settings() -> dict[str, Any]:
    return {
        "filterableAttributes": list(RECORD_FILTERABLE),
        "sortableAttributes": list(RECORD_SORTABLE),
        "displayedAttributes": ["*"],
    }


def ensure_index(api: MeiliApi, uid: str, wanted: dict[str, Any]) -> None:
    """Create ``uid`` if missing, apply ``wanted`` where it differs, verify the result."""
    try:
        held = api.call("GET", f"/indexes/{uid}")
    except MeilisearchError as exc:
        if exc.code != "index_not_found":
            raise
        api.write("POST", "/indexes", {"uid": uid, "primaryKey": "id"})
        held = {"primaryKey": "id"}
    if held.get("primaryKey") not in ("id", None):
        raise ConfigError(
            f"the meilisearch index {uid!r} at {api.url} has the primary key "
            f"{held.get('primaryKey')!r}; Headwater needs 'id'. Set another `index` for "
            "this Headwater index, or delete that index if it is Headwater's"
        )
    current = api.call("GET", f"/indexes/{uid}/settings")
    _refuse_embedder_change(api, uid, wanted, current)
    if differences(wanted, current):
        api.write("PATCH", f"/indexes/{uid}/settings", wanted)
        current = api.call("GET", f"/indexes/{uid}/settings")
        left = differences(wanted, current)
        if left:
            raise ConfigError(
                f"the meilisearch index {uid!r} at {api.url} did not take the settings "
                f"Headwater applied: {'; '.join(left)}. Check that the server is "
                "Meilisearch 1.16 or newer and that the API key may change settings "
                "(`settings.update`)"
            )


def _refuse_embedder_change(
    api: MeiliApi, uid: str, wanted: dict[str, Any], current: dict[str, Any]
) -> None:
    want = wanted.get("embedders", {}).get(EMBEDDER)
    held = (current.get("embedders") or {}).get(EMBEDDER)
    if want is None or held is None:
        return
    for key in ("source", "dimensions"):
        if held.get(key) != want[key]:
            raise ConfigError(
                f"the meilisearch index {uid!r} at {api.url} has embedders.{EMBEDDER}."
                f"{key} = {held.get(key)!r}; Headwater needs {want[key]!r} (the embedder "
                f"makes {want['dimensions']}-dimensional vectors). Build a new generation "
                "with `headwater rebuild`, or set another `index`"
            )


def differences(wanted: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Each wanted setting the server reports otherwise, as ``name: wanted …, found …``."""
    found: list[str] = []
    for name in ("filterableAttributes", "sortableAttributes"):
        if name in wanted:
            held = _attribute_names(current.get(name))
            missing = [a for a in wanted[name] if a not in held]
            if missing:
                found.append(f"{name} lacks {missing} (found {sorted(held)})")
    for name in ("searchableAttributes", "displayedAttributes"):
        if name in wanted and list(current.get(name) or []) != wanted[name]:
            found.append(f"{name} is {current.get(name)!r}, not {wanted[name]!r}")
    want = wanted.get("embedders", {}).get(EMBEDDER)
    if want is not None:
        embedder = (current.get("embedders") or {}).get(EMBEDDER) or {}
        if any(embedder.get(k) != v for k, v in want.items()):
            found.append(f"embedders.{EMBEDDER} is {embedder or None!r}, not {want!r}")
    return found


def _attribute_names(value: Any) -> set[str]:
    """Attribute names of a filterable/sortable list: plain names, or (Meilisearch 1.14+)
    objects whose ``attributePatterns`` name them."""
    names: set[str] = set()
    for item in value or []:
        if isinstance(item, str):
            names.add(item)
        elif isinstance(item, dict):
            names.update(str(p) for p in item.get("attributePatterns", []))
    return names
