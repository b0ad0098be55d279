"""Atlassian Document Format (ADF) to plain text, for Jira descriptions and comments.

ADF is a JSON tree of block nodes (paragraph, heading, lists, code, tables, panels) and
inline nodes (text, mention, emoji, hardBreak, inlineCard); see
https://developer.atlassian.com/cloud/jira/platform/apis/document/structure/. Blocks
become paragraphs separated by blank lines, list items get a ``- `` marker, inline nodes
keep their visible text. Unknown nodes contribute their children's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BLOCKS = frozenset(
    {
        "paragraph",
        "heading",
        "blockquote",
        "codeBlock",
        "panel",
        "rule",
        "tableRow",
        "mediaSingle",
        "expand",
        "nestedExpand",
        "decisionItem",
        "taskItem",
    }
)


def adf_to_text(node: Any) -> str:
    """The visible text of an ADF document (or of a plain string, for old payloads)."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.strip()
    lines: list[str] = []
    _walk(node, lines, depth=0)
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip()


def _inline(node: Mapping[str, Any]) -> str:
    kind = node.get("type")
    attrs = node.get("attrs", {})
    if kind == "text":
        return str(node.get("text", ""))
    if kind == "hardBreak":
        return "\n"
    if kind == "mention":
        return str(attrs.get("text", ""))
    if kind == "emoji":
        return str(attrs.get("text") or attrs.get("shortName", ""))
    if kind in ("inlineCard", "blockCard"):
        return str(attrs.get("url", ""))
    if kind == "date":
        return str(attrs.get("timestamp", ""))
    if kind == "status":
        return str(attrs.get("text", ""))
    return "".join(_inline(child) for child in node.get("content", []))


def _walk(node: Mapping[str, Any], lines: list[str], depth: int) -> None:
    kind = node.get("type")
    children = node.get("content", [])
    if kind in ("bulletList", "orderedList", "taskList"):
        for item in children:
            start = len(lines)
            _walk(item, lines, depth + 1)
            if len(lines) > start:
                lines[start] = "  " * depth + "- " + lines[start].lstrip()
        lines.append("")
        return
    if kind == "listItem":
        for child in children:
            _walk(child, lines, depth)
        return
    if kind in BLOCKS:
        text = "".join(_inline(child) for child in children)
        if kind == "heading":
            text = "#" * int(node.get("attrs", {}).get("level", 1)) + " " + text
        if kind in ("tableRow",):
            text = " | ".join(adf_to_text(cell) for cell in children)
        if text.strip():
            lines.append(text)
            if depth == 0:
                lines.append("")
        return
    for child in children:
        _walk(child, lines, depth)
