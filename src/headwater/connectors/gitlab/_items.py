"""GitLab objects as documents: ids, references, and the listings they come from.

Object ids read like GitLab's own URLs: ``{project}/-/blob/{path}`` for a file of the
configured branch, ``{project}/-/issues/{iid}``, ``{project}/-/merge_requests/{iid}``,
``{project}/-/wikis/{slug}``. A fetch reference is a JSON list (kind, project, key), so
no project path or file name needs escaping.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
from dataclasses import replace
from datetime import datetime
from typing import Any

from headwater.clock import as_utc
from headwater.types import Access, SourceDocument

SEP = "/-/"
FILE, ISSUES, MRS, WIKIS = "blob", "issues", "merge_requests", "wikis"


def object_id(project: str, kind: str, key: str | int) -> str:
    """The object id of ``key`` (a path, an iid, a slug) of ``kind`` in ``project``."""
    return f"{project}{SEP}{kind}/{key}"


def split_id(oid: str) -> tuple[str, str, str]:
    """``(project, kind, key)`` of an object id."""
    project, rest = oid.split(SEP, 1)
    kind, key = rest.split("/", 1)
    return project, kind, key


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 time as GitLab writes it (``2024-05-01T09:00:00.000Z``), in UTC."""
    return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00"))) if value else None


def z(moment: datetime) -> str:
    """``moment`` as GitLab's query parameters take it."""
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def blob_document(
    web: str, project: str, branch: str, path: str, blob_id: str, access: Access
) -> SourceDocument:
    """A file of the branch from the tree listing: content fetched lazily by blob id."""
    return SourceDocument(
        object_id=object_id(project, FILE, path),
        locator=f"{web}/{project}/-/blob/{branch}/{path}",
        title="",  # the parser finds the title; else the core uses the path
        version=blob_id,
        fetch_ref=json.dumps([FILE, project, blob_id]),
        media_type=mimetypes.guess_type(path)[0],
        metadata={"project": project, "kind": "file", "path": path, "branch": branch},
        access=access,
    )


def file_document(
    web: str, project: str, branch: str, file: dict[str, Any], access: Access
) -> SourceDocument:
    """A file from the Repository Files API (``content`` base64), as a diff names it."""
    path = str(file["file_path"])
    doc = blob_document(web, project, branch, path, str(file["blob_id"]), access)
    content = base64.b64decode(str(file.get("content") or ""))
    return replace(doc, content=content, fetch_ref=None)


def item_document(project: str, kind: str, item: dict[str, Any], access: Access) -> SourceDocument:
    """An issue or merge request: its text (description and notes) fetched lazily."""
    iid = int(item["iid"])
    updated = parse_time(item.get("updated_at"))
    mark = "#" if kind == ISSUES else "!"
    return SourceDocument(
        object_id=object_id(project, kind, iid),
        locator=str(item.get("web_url", "")),
        title=f"{project}{mark}{iid}: {item.get('title', '')}",
        version=str(item.get("updated_at", "")),
        fetch_ref=json.dumps([kind, project, iid]),
        media_type="text/markdown",
        updated_at=updated,
        sequence=int(updated.timestamp()) if updated else None,
        metadata={
            "project": project,
            "kind": "issue" if kind == ISSUES else "merge_request",
            "state": str(item.get("state", "")),
        },
        access=access,
    )


def wiki_document(web: str, project: str, page: dict[str, Any], access: Access) -> SourceDocument:
    """A wiki page listed with its content (the listing has no version: a content hash)."""
    slug = str(page["slug"])
    content = str(page.get("content") or "").encode()
    kind = {"markdown": "text/markdown", "asciidoc": "text/asciidoc"}.get(str(page.get("format")))
    return SourceDocument(
        object_id=object_id(project, WIKIS, slug),
        locator=f"{web}/{project}/-/wikis/{slug}",
        title=str(page.get("title", slug)),
        version=hashlib.sha256(content).hexdigest()[:20],
        content=content,
        media_type=kind or "text/plain",
        metadata={"project": project, "kind": "wiki"},
        access=access,
    )


def markdown(item: dict[str, Any], notes: list[dict[str, Any]]) -> bytes:
    """An issue or merge request as markdown: title, description, then each human note."""
    parts = [f"# {item.get('title', '')}", str(item.get("description") or "")]
    for note in notes:
        if note.get("system"):
            continue  # "changed the description", "added label": GitLab's own notes
        who = (note.get("author") or {}).get("username", "someone")
        parts.append(f"## {who} ({note.get('created_at', '')})")
        parts.append(str(note.get("body") or ""))
    return "\n\n".join(p for p in parts if p).encode()
