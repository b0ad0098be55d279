"""Structured text: JSON, JSON Lines and XML, read as text that search can find.

JSON is parsed (so a file that is not JSON is ``parse_error``) and written back indented,
one value per line, so a minified file becomes lines the chunker can cut; JSON Lines is
one block per record, and a bad line is ``parse_error`` naming it. XML is parsed with
defusedxml: a DTD that declares entities (a "billion laughs" bomb, or an external
entity reading a local file) is refused, never expanded; the text is every text node
in document order, one line each, and the title the first ``<title>`` element.
YAML is not parsed at all (aliases can expand exponentially): it is read as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from headwater.errors import ItemError
from headwater.pipeline.parse._common import decode_text

JSON_VERSION = "json-1"
JSONL_VERSION = "jsonl-1"
XML_VERSION = "xml-1+defusedxml"


def parse_json(content: bytes, charset: str | None) -> tuple[str, str | None]:
    text = decode_text(content, charset)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ItemError(
            "parse_error",
            f"the file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}. "
            "Fix it, or list its extension in [parse] text_extensions to read it as text.",
        ) from exc
    return json.dumps(value, indent=2, ensure_ascii=False), None


def parse_jsonl(content: bytes, charset: str | None) -> tuple[str, str | None]:
    records: list[str] = []
    for number, line in enumerate(decode_text(content, charset).splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ItemError(
                "parse_error",
                f"line {number} is not valid JSON: {exc.msg} at column {exc.colno}; "
                "expected one JSON value per line. Fix the line, or list the extension "
                "in [parse] text_extensions to read the file as text.",
            ) from exc
        records.append(json.dumps(value, indent=2, ensure_ascii=False))
    return "\n\n".join(records), None


def parse_xml(content: bytes, charset: str | None) -> tuple[str, str | None]:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root: Any = fromstring(content, forbid_dtd=False, forbid_entities=True)
    except DefusedXmlException as exc:
        raise ItemError(
            "parse_error",
            f"the XML file declares entities or external references ({exc}); they are never "
            "expanded. Remove the DTD's entity declarations, or exclude the file.",
        ) from exc
    title: str | None = None
    for element in root.iter():
        if str(element.tag).rpartition("}")[2].lower() == "title" and (element.text or "").strip():
            title = element.text
            break
    lines = (" ".join(piece.split()) for piece in _texts(root))
    return "\n".join(line for line in lines if line), title


def _texts(root: Any) -> Iterator[str]:
    """Every text and tail of the tree in document order, without recursion."""
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        element, closed = stack.pop()
        if closed:
            yield element.tail or ""
            continue
        yield element.text or ""
        for child in reversed(list(element)):
            stack += [(child, True), (child, False)]
