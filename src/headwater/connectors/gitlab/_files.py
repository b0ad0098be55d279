"""A branch's files between two reads: the tree query, the compare, the changed files.

``compare`` asks GitLab for the diff between the saved head commit and the new one
(``straight=true``: the two commits themselves, not their merge base, so a force push
is compared right); it gives None when GitLab cannot: the saved commit is gone (404
after a force push and housekeeping) or the diff was cut (``compare_timeout``,
``overflow``), and the caller lists the tree again. ``ChangedFiles`` turns the diffs into
``Deleted`` (removed and renamed-away paths) and documents read through the Repository
Files API at the new commit. ``JsonCache`` keeps the last enumeration's file ids.
See https://docs.gitlab.com/api/repositories/#compare-branches-tags-or-commits and
https://docs.gitlab.com/api/repository_files/#get-file-from-repository.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from headwater.connectors.gitlab._client import GitlabClient, MissingAtServer, project_path
from headwater.connectors.gitlab._items import FILE, file_document, object_id
from headwater.types import Access, Deleted, SourceDocument


def tree_params(sha: str, per_page: int) -> dict[str, str | int]:
    """The query listing every file of commit ``sha``, keyset paged."""
    return {"ref": sha, "recursive": "true", "pagination": "keyset", "per_page": per_page}


def compare(client: GitlabClient, project: str, old: str, new: str) -> list[dict[str, Any]] | None:
    """The diffs from ``old`` to ``new``, or None when GitLab cannot give them all."""
    path = f"{project_path(project)}/repository/compare"
    try:
        answer = client.get(path, {"from": old, "to": new, "straight": "true"})
    except MissingAtServer:
        return None  # the saved commit is gone (force push and housekeeping)
    if answer.get("compare_timeout") or answer.get("overflow"):
        return None  # a cut diff would miss changes: list the tree instead
    return list(answer.get("diffs") or [])


class ChangedFiles:
    """The items a compare's diffs stand for."""

    def __init__(self, client: GitlabClient, web: str, keys: Callable[[str], bool]) -> None:
        self._client, self._web, self._keys = client, web, keys

    def changed(
        self, project: str, branch: str, sha: str, diffs: list[dict[str, Any]], access: Access
    ) -> Iterator[SourceDocument | Deleted]:
        """``Deleted`` for each removed or renamed-away path, a document for each new or
        changed one (read at ``sha``), in the diff's order; paths the filters leave out
        are skipped."""
        for diff in diffs:
            old, new = str(diff["old_path"]), str(diff["new_path"])
            if (diff.get("deleted_file") or diff.get("renamed_file")) and self._keys(old):
                yield Deleted(object_id(project, FILE, old))
            if diff.get("deleted_file") or not self._keys(new):
                continue
            path = f"{project_path(project)}/repository/files/{quote(new, safe='')}"
            try:
                file = self._client.get(path, {"ref": sha})
            except MissingAtServer:
                continue  # a submodule, not a file: the tree listing skips it too
            yield file_document(self._web, project, branch, file, access)


class JsonCache:
    """A JSON file in the connector's state directory (a cache: losing it costs requests)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Any]:
        """The cached data, or empty when the file is missing or unreadable."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def save(self, data: dict[str, Any]) -> None:
        """Replace the cached data (written to a temp file, then renamed)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_suffix(".tmp")
        temp.write_text(json.dumps(data))
        temp.replace(self.path)
