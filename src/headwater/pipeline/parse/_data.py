"""Structured text: JSON, JSON Lines and XML, read as text that search can find.

JSON is parsed (so a file that is not JSON is ``parse_error``) and written back indented,
one value per line, so a minified file becomes lines the chunker can cut; JSON Lines is
one block per record, and a bad line is ``parse_error`` naming it. XML is parsed with
defusedxml; the text is every text node in document order, one line each, and the
title the first ``<title>`` element. Entities are never expanded: a file whose DTD
declares any (DocBook does; so do a "billion laughs" bomb and an external entity
reading ``/etc/passwd``) is read without a parser instead, its tags stripped and each
entity reference left as written (``&version;``).
YAML is not parsed at all (aliases can expand exponentially): it is read as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from headwater.errors import ItemError
from headwater.pipeline.parse._common import decode_text

_COMMENT = re.compile(r"<!--.*?-->|<\?.*?\?>", re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_PREDEFINED = re.compile(r"&(lt|gt|amp|quot|apos|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}

JSON_VERSION = "json-1"
JSONL_VERSION = "jsonl-1"
XML_VERSION = "xml-1+defusedxml"


def parse_json(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """A JSON document, re-indented as text, and no title."""
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
    """A JSON-lines document's text (one record per line), and no title."""
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
    """An XML document's text and first ``title`` element, parsed safely (defusedxml)."""
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root: Any = fromstring(content, forbid_dtd=False, forbid_entities=True)
    except DefusedXmlException:
        return _unparsed_text(decode_text(content, charset)), None
    title: str | None = None
    for element in root.iter():
        if str(element.tag).rpartition("}")[2].lower() == "title" and (element.text or "").strip():
            title = element.text
            break
    lines = (" ".join(piece.split()) for piece in _texts(root))
    return "\n".join(line for line in lines if line), title


def _unparsed_text(xml: str) -> str:
    """The text of an XML file whose DTD declares entities, read without a parser: the
    DTD, comments and tags removed, entity references left as written (``&product;``),
    character references and the five predefined entities decoded."""
    text = _COMMENT.sub("", _without_doctype(xml))
    text = _TAG.sub("\n", text)
    text = _PREDEFINED.sub(lambda found: _ENTITIES.get(found[1]) or _char(found[1]), text)
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _without_doctype(xml: str) -> str:
    start = xml.find("<!DOCTYPE")
    if start < 0:
        return xml
    close, bracket = xml.find(">", start), xml.find("[", start)
    if 0 <= bracket < close:  # an internal subset: it ends at "]>"
        end = xml.find("]>", bracket)
        close = end + 1 if end >= 0 else len(xml) - 1
    return xml[:start] + xml[close + 1 :] if close >= 0 else xml[:start]


def _char(reference: str) -> str:
    try:
        code = int(reference[2:], 16) if reference[1:2] in "xX" else int(reference[1:])
        return chr(code)
    except (ValueError, OverflowError):
        return f"&{reference};"


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
