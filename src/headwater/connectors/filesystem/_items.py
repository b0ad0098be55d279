"""The filesystem connector's per-file objects, built for a listing of a million files.

The idea: a no-op re-sync yields one ``SourceDocument`` per file and a ``Checkpoint`` per
batch of files (``SourceContext.checkpoint_every``), so they are built without the frozen
dataclasses' ``__init__`` (one ``object.__setattr__`` per field, keyword arguments;
``SourceDocument.of``) and the cursor ``{"after": [...parts]}`` without the JSON encoder,
its folder part once a folder: the same objects and text, a few times faster
(tests/core/test_noop_fast_paths.py compares them with the constructors' and
``json.dumps``'s own).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii

from headwater.connectors.filesystem._read import fetch_ref
from headwater.connectors.names import is_utf8, printable
from headwater.scopes import HIERARCHY_KEY
from headwater.types import Checkpoint, Failure, SourceDocument, Stage

__all__ = ["_after_cursor", "_checkpoint", "_cursor_head", "listed_item"]

_NONE = dict.fromkeys(("content", "media_type", "sequence", "access"))


def listed_item(
    prefix: str, rel: str, st: os.stat_result, max_file_bytes: int
) -> SourceDocument | Failure:
    """The document of the file ``rel`` the walk found under the root ``prefix`` (which
    ends in ``/``), or the failure of a name that is not UTF-8."""
    locator = prefix + rel  # what str(root.joinpath(*parts)) gives, faster
    if not (rel.isascii() or is_utf8(rel)):
        shown = printable(rel)
        return Failure(
            object_id=shown,
            locator=printable(locator),
            stage=Stage.ENUMERATE.value,
            error_class="undecodable_name",
            message=(
                f"file name '{shown}' is not valid UTF-8; it was skipped. "
                "Rename the file (e.g. `convmv -f latin1 -t utf8`) or exclude it."
            ),
            permanent=True,
        )
    size = st.st_size
    return SourceDocument.of(
        {
            "object_id": rel,
            "locator": locator,
            "title": "",
            "version": f"{st.st_mtime_ns}:{size}",
            **_NONE,  # content, media_type, sequence, access
            "fetch_ref": fetch_ref(rel, st),
            "updated_at": datetime.fromtimestamp(st.st_mtime, UTC),
            # a file over max_file_bytes is listed (so it can be a metadata-only
            # document) but never read: its fetch is a permanent too_large failure
            "metadata": {"path": rel, HIERARCHY_KEY: rel}
            if size <= max_file_bytes
            else {"path": rel, HIERARCHY_KEY: rel, "size": str(size)},
            "size": size,
        }
    )


def _after_cursor(parts: tuple[str, ...]) -> str:
    """``json.dumps({"after": list(parts)})``: the checkpoint after the file at ``parts``."""
    return _cursor_head(parts[:-1]) + encode_basestring_ascii(parts[-1]) + "]}"


def _cursor_head(folder: tuple[str, ...]) -> str:
    """The start of ``_after_cursor`` of every file in ``folder``: all but its name."""
    return '{"after": [' + "".join(encode_basestring_ascii(p) + ", " for p in folder)


def _checkpoint(cursor: str) -> Checkpoint:
    """``Checkpoint(cursor)``."""
    point = object.__new__(Checkpoint)
    point.__dict__["cursor"] = cursor
    return point
