"""Folder nodes of a source as a caller may see them (``headwater tree``).

No connector shipped today reports folders with ACLs of their own, so the nodes are
derived from the manifest's active documents of the source that the caller may see
(the truth search checks its results against): a folder is shown when at least one
document under it is visible, with the number of those documents; a document is shown
as a leaf. Paths are the documents' ``hierarchy`` metadata (``headwater.scopes``), so a
node's ``path`` is exactly what ``--under SOURCE:PATH`` takes. Documents are read in
keyset pages; only the listed folder's children are held.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.manifest.records import DocumentRecord
from headwater.scopes import hierarchy_of, normalize_path

PAGE = 1000
FOLDER = "folder"
DOCUMENT = "document"

# ``page(after, limit)``: the source's next active documents in id order.
Pages = Callable[[str, int], Sequence[DocumentRecord]]


@dataclass
class TreeNode:
    """One child of the listed folder: a folder (with its visible documents) or a
    document (with its id and title)."""

    name: str
    path: str
    kind: str
    documents: int = 0
    document_id: str | None = None
    title: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The node as ``headwater tree --json`` prints it."""
        shown: dict[str, Any] = {
            "name": self.name,
            "path": self.path,
            "kind": self.kind,
            "documents": self.documents,
        }
        if self.kind == DOCUMENT:
            shown |= {"document_id": self.document_id, "title": self.title}
        return shown


@dataclass
class TreeReport:
    """The children of ``path`` in ``source``; ``unplaced`` counts visible documents
    without a hierarchy path (their source has none), listed nowhere."""

    source: str
    path: str
    nodes: list[TreeNode] = field(default_factory=list)
    unplaced: int = 0

    def as_dict(self) -> dict[str, Any]:
        """``{"source", "path", "nodes": [...], "unplaced"}``."""
        return {
            "source": self.source,
            "path": self.path,
            "nodes": [n.as_dict() for n in self.nodes],
            "unplaced": self.unplaced,
        }


def folder_tree(source: str, path: str, pages: Pages, principals: Sequence[str]) -> TreeReport:
    """The children of ``path`` (``""``: the source's root) visible to ``principals``."""
    base = normalize_path(path)
    depth = len(base.split("/")) if base else 0
    wanted = set(principals)
    children: dict[str, TreeNode] = {}
    report = TreeReport(source, base)
    after = ""
    while True:
        page = pages(after, PAGE)
        for record in page:
            if wanted.isdisjoint(record.acl):
                continue
            placed = hierarchy_of(record.metadata)
            if not placed:
                report.unplaced += 1
                continue
            parts = placed.split("/")
            if parts[:depth] != (base.split("/") if base else []) or len(parts) <= depth:
                continue  # not under the folder (whole segments compared), or the folder
            name = parts[depth]
            node_path = "/".join(parts[: depth + 1])
            leaf = len(parts) == depth + 1
            key = ("d:" if leaf else "f:") + node_path
            node = children.get(key)
            if node is None:
                node = TreeNode(name, node_path, DOCUMENT if leaf else FOLDER)
                children[key] = node
            node.documents += 1
            if leaf:
                node.document_id, node.title = record.document_id, record.title
        if len(page) < PAGE:
            break
        after = page[-1].document_id
    report.nodes = sorted(children.values(), key=lambda n: (n.kind != FOLDER, n.name, n.path))
    return report
