"""Notion pages as Markdown: the title, a database row's properties, then the blocks.

Rich text is joined from ``plain_text`` (links kept as Markdown links); block types map
to their Markdown (headings, lists, to-dos, quotes, callouts, code, tables, dividers);
media and embeds become a link with their caption. A child page or database is a title
line only: it is a document of its own. Unknown block types are skipped.
See https://developers.notion.com/reference/block and
https://developers.notion.com/reference/page-property-values.
"""

from __future__ import annotations

from typing import Any

Block = dict[str, Any]


def rich(items: list[dict[str, Any]] | None) -> str:
    """Rich text as Markdown."""
    out = []
    for item in items or []:
        text = str(item.get("plain_text", ""))
        href = item.get("href")
        out.append(f"[{text}]({href})" if href and text else text)
    return "".join(out)


def title_of(page: dict[str, Any]) -> str:
    """The page's title (its ``title`` property)."""
    for prop in (page.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("type") == "title":
            return rich(prop.get("title"))
    return ""


def property_text(prop: dict[str, Any]) -> str:
    """A property value as one line of text ("" for none)."""
    kind = str(prop.get("type", ""))
    value = prop.get(kind)
    if kind in ("title", "rich_text"):
        return rich(value)
    if kind in ("select", "status"):
        return str((value or {}).get("name", ""))
    if kind == "multi_select":
        return ", ".join(str(v.get("name", "")) for v in value or [])
    if kind == "date":
        start, end = (value or {}).get("start"), (value or {}).get("end")
        return f"{start} → {end}" if end else str(start or "")
    if kind == "people":
        return ", ".join(str(p.get("name") or p.get("id", "")) for p in value or [])
    if kind in ("number", "checkbox", "url", "email", "phone_number", "created_time"):
        return "" if value is None else str(value)
    return ""


_PREFIX = {
    "heading_1": "# ",
    "heading_2": "## ",
    "heading_3": "### ",
    "bulleted_list_item": "- ",
    "numbered_list_item": "1. ",
    "quote": "> ",
    "toggle": "- ",
}


def block_lines(block: Block, children: list[str], depth: int) -> list[str]:
    """The Markdown lines of one block (``children``: its children's lines, rendered)."""
    kind = str(block.get("type", ""))
    data = block.get(kind) or {}
    pad = "  " * depth
    text = rich(data.get("rich_text"))
    if kind == "paragraph":
        line = [pad + text] if text else []
    elif kind in _PREFIX:
        line = [pad + _PREFIX[kind] + text]
    elif kind == "to_do":
        line = [pad + ("- [x] " if data.get("checked") else "- [ ] ") + text]
    elif kind == "callout":
        icon = (data.get("icon") or {}).get("emoji", "")
        line = [pad + f"> {icon} {text}".replace(">  ", "> ")]
    elif kind == "code":
        line = [f"```{data.get('language', '')}", rich(data.get("rich_text")), "```"]
    elif kind == "divider":
        line = ["---"]
    elif kind in ("child_page", "child_database"):
        line = [pad + f"**{data.get('title', '')}**"]
    elif kind == "table_row":
        line = ["| " + " | ".join(rich(cell) for cell in data.get("cells") or []) + " |"]
    elif kind in ("bookmark", "embed", "link_preview", "image", "video", "file", "pdf"):
        url = data.get("url") or (data.get(data.get("type", "")) or {}).get("url", "")
        caption = rich(data.get("caption")) or url
        line = [pad + f"[{caption}]({url})"] if url else []
    elif kind == "equation":
        line = [f"$$ {data.get('expression', '')} $$"]
    else:
        line = []
    return line + children


def page_markdown(page: dict[str, Any], body: list[str]) -> bytes:
    """The page as Markdown: its title, a row's other properties, then ``body`` lines."""
    parts = [f"# {title_of(page)}"]
    if (page.get("parent") or {}).get("type") == "database_id":
        props = page.get("properties") or {}
        rows = [
            f"- **{name}**: {text}"
            for name, prop in sorted(props.items())
            if isinstance(prop, dict)
            and prop.get("type") != "title"
            and (text := property_text(prop))
        ]
        parts.append("\n".join(rows))
    parts.append("\n".join(body))
    return "\n\n".join(p for p in parts if p.strip()).encode()
