"""Opening an index: create it when missing, else check its mappings fit this sink.

An index made by an older schema may lack a field Headwater can add in place (``ADDABLE``:
a new mapping for an unused field is legal in OpenSearch); any other difference in a
field's type, vector dimension, engine or space is refused with the fix (a new generation
with ``headwater rebuild``, or another ``index``), since OpenSearch cannot change a
mapped field.
"""

from __future__ import annotations

from typing import Any

from headwater.errors import ConfigError
from headwater.sinks.opensearch._client import OpensearchError, OsApi

# Fields an index of an older schema lacks, added to its mapping when it is opened.
ADDABLE = ("scopes",)


def ensure_index(api: OsApi, url: str, index: str, body: dict[str, Any]) -> None:
    """Create ``index`` with ``body``, or check the existing one's mappings match it."""
    held = api.call("GET", f"/{index}/_mapping", missing_ok=True)
    if held is None:
        try:
            api.call("PUT", f"/{index}", body)
        except OpensearchError as exc:
            if exc.type != "resource_already_exists_exception":
                raise
        held = api.call("GET", f"/{index}/_mapping")
    properties = held[index]["mappings"].get("properties", {})
    added = {f: m for f, m in body["mappings"]["properties"].items() if f in ADDABLE}
    added = {f: m for f, m in added.items() if f not in properties}
    if added:  # an index made before the field existed (schema 1): add its mapping
        api.call("PUT", f"/{index}/_mapping", {"properties": added})
        properties = {**properties, **added}
    for field, wanted in body["mappings"]["properties"].items():
        have = properties.get(field, {})
        for key in ("type", "dimension"):
            if key in wanted and have.get(key) != wanted[key]:
                raise ConfigError(
                    f"the opensearch index {index!r} at {url} maps "
                    f"{field}.{key} = {have.get(key)!r}; Headwater needs {wanted[key]!r}. "
                    "Build a new generation with `headwater rebuild`, or set another `index`"
                )
        method, have_method = wanted.get("method"), have.get("method", {})
        for key in ("engine", "space_type"):
            if method is not None and have_method.get(key) != method[key]:
                raise ConfigError(
                    f"the opensearch index {index!r} maps vector.method.{key} = "
                    f"{have_method.get(key)!r}; the options say {method[key]!r}. Set "
                    f"`{key}` back, or build a new generation with `headwater rebuild`"
                )
