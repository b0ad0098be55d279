"""Reports as readable lines for a person: never a Python dict or list repr.

A command's human output of a JSON report (``doc show``, ``runs show``, ``dlq show``)
prints one ``key: value`` line per field; a nested object's fields follow indented under
its key, a list of plain values is joined with commas, a list of objects gives one ``-``
item each. ``null`` is ``-``, booleans are ``yes``/``no``, an empty list ``(none)``.
Every value goes through ``safe`` (it may come from a source). The index report (``index``,
``sync``) is one sentence, ``indexed_line``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.cli.common import out, safe
from headwater.indexer.report import IndexReport

INDENT = "  "


def scalar(value: Any) -> str:
    """One plain value as a person reads it."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return safe(value, markup=False)


def field_lines(data: Mapping[str, Any], depth: int = 0) -> list[str]:
    """``data`` as ``key: value`` lines, nested objects indented under their key."""
    lines: list[str] = []
    pad = INDENT * depth
    for key, value in data.items():
        name = safe(key, markup=False)
        if isinstance(value, Mapping):
            if not value:
                lines.append(f"{pad}{name}: (none)")
                continue
            lines.append(f"{pad}{name}:")
            lines.extend(field_lines(value, depth + 1))
        elif isinstance(value, list | tuple):
            lines.extend(_list_lines(name, list(value), depth))
        else:
            lines.append(f"{pad}{name}: {scalar(value)}")
    return lines


def _list_lines(name: str, items: list[Any], depth: int) -> list[str]:
    pad = INDENT * depth
    if not items:
        return [f"{pad}{name}: (none)"]
    if not any(isinstance(i, Mapping | list | tuple) for i in items):
        return [f"{pad}{name}: {', '.join(scalar(i) for i in items)}"]
    lines = [f"{pad}{name}:"]
    for item in items:
        if isinstance(item, Mapping):
            nested = field_lines(item, depth + 2)
            first = nested[0].lstrip() if nested else "(empty)"
            lines.append(f"{pad}{INDENT}- {first}")
            lines.extend(nested[1:])
        else:
            lines.extend(_list_lines("-", list(item), depth + 1))
    return lines


def print_fields(data: Mapping[str, Any]) -> None:
    """Print ``data`` as ``field_lines``."""
    for line in field_lines(data):
        out.print(line, markup=False)


def indexed_line(report: IndexReport) -> str:
    """What an index pass did, in one sentence."""
    return (
        f"indexed: {report.replaced} replaced, {report.deleted} deleted, "
        f"{report.acl_updates} ACL updates, {report.failed} failed; {report.chunks} chunks "
        f"written, {report.embedded} embedded, {report.cache_hits} from cache"
    )
