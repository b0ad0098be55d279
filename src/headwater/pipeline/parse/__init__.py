"""Parse raw bytes into normalized text: one parser per format, chosen by media type.

``parse`` picks a parser by media type first, then by the extension of ``name``, runs it
and normalizes the result. Every failure is an ``ItemError``: ``unsupported_type`` for a
format we do not read (a binary file named ``.md`` or ``.txt`` included), ``too_large``
for a zip-based file that would unpack past its limits, ``parse_error`` for a file its
parser cannot read,
``empty_document`` when no text is left. ``PARSER_VERSIONS`` is part of the pipeline
version: bump a parser's version whenever its output for the same bytes may change.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Final

from headwater.errors import ItemError
from headwater.pipeline.parse._common import (
    ParsedDocument,
    ParserFunc,
    binary_reason,
    normalize_text,
    normalize_title,
    reading,
)
from headwater.pipeline.parse._docx import DOCX_VERSION, parse_docx
from headwater.pipeline.parse._html import HTML_VERSION, parse_html
from headwater.pipeline.parse._pdf import PDF_VERSION, parse_pdf
from headwater.pipeline.parse._text import (
    MARKDOWN_VERSION,
    TEXT_VERSION,
    parse_markdown,
    parse_text,
)

__all__ = [
    "PARSER_VERSIONS",
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_MEDIA_TYPES",
    "ParsedDocument",
    "normalize_text",
    "parse",
    "parser_for",
]

PARSER_VERSIONS: Final[dict[str, str]] = {
    "text": TEXT_VERSION,
    "markdown": MARKDOWN_VERSION,
    "html": HTML_VERSION,
    "pdf": PDF_VERSION,
    "docx": DOCX_VERSION,
}

_TEXT_PARSERS: Final = frozenset({"text", "markdown", "html"})
"""Parsers that read the bytes as text: a binary file is refused before they run."""

_PARSERS: Final[dict[str, ParserFunc]] = {
    "text": parse_text,
    "markdown": parse_markdown,
    "html": parse_html,
    "pdf": parse_pdf,
    "docx": parse_docx,
}

SUPPORTED_EXTENSIONS: Final[dict[str, str]] = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
"""Extension (lower case, with dot) → parser name."""

SUPPORTED_MEDIA_TYPES: Final[dict[str, str]] = {
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
}


def parser_for(name: str, media_type: str | None) -> str | None:
    """The parser name for a file, or None when no parser reads it.

    A specific media type decides; a generic one (``application/octet-stream``, or a
    ``text/plain`` that a server sends for ``.md`` files) defers to the extension.
    """
    mime, _ = _split_media_type(media_type)
    by_extension = SUPPORTED_EXTENSIONS.get(PurePosixPath(name).suffix.lower())
    by_media = SUPPORTED_MEDIA_TYPES.get(mime) if mime else None
    if by_media == "text" and by_extension == "markdown":
        return by_extension
    return by_media or by_extension


def parse(content: bytes, *, name: str, media_type: str | None) -> ParsedDocument:
    """Parse one file's bytes into normalized text and a title.

    Raises ``ItemError`` (``unsupported_type``, ``too_large``, ``parse_error`` or
    ``empty_document``, all permanent); never anything else.
    """
    parser = parser_for(name, media_type) or _extensionless_text(name, media_type)
    if parser is None:
        raise ItemError(
            "unsupported_type",
            f"{name!r} (media type {media_type or 'unknown'}) is not a supported format; "
            f"expected one of {', '.join(sorted(SUPPORTED_EXTENSIONS))}. "
            "Exclude it in the source's configuration to skip it quietly.",
        )
    _, charset = _split_media_type(media_type)
    if parser in _TEXT_PARSERS and (why := binary_reason(content, charset)):
        raise ItemError(
            "unsupported_type",
            f"{name!r} ({len(content):,} bytes) is binary, not "
            f"{'plain' if parser == 'text' else parser} text: {why}. "
            "Exclude it in the source's configuration, or give it the extension of its "
            "real format.",
        )
    with reading(parser):
        raw_text, raw_title = _PARSERS[parser](content, charset)
        text = normalize_text(raw_text)
        title = normalize_title(raw_title)
    if not text.strip():
        raise ItemError(
            "empty_document",
            f"{name!r} has no text after parsing with the {parser} parser ("
            + ("a scanned PDF without a text layer?" if parser == "pdf" else "an empty file?")
            + "); it is read again when it changes, or exclude it.",
        )
    return ParsedDocument(text=text, title=title, parser=parser)


def _extensionless_text(name: str, media_type: str | None) -> str | None:
    """``"text"`` for a name without an extension (``README``, ``NEWS``, ``LICENSE``)
    whose media type says nothing more specific: read as plain text, and refused as
    binary by the sniff below when its bytes are not text. Hidden files (``.gitignore``)
    are not documents: they stay unsupported."""
    mime, _ = _split_media_type(media_type)
    generic = mime is None or mime == "application/octet-stream" or mime.startswith("text/")
    path = PurePosixPath(name)
    return "text" if generic and not path.suffix and not path.name.startswith(".") else None


def _split_media_type(media_type: str | None) -> tuple[str | None, str | None]:
    """``"text/html; charset=latin-1"`` → ``("text/html", "latin-1")``."""
    if not media_type:
        return None, None
    mime, *params = (part.strip() for part in media_type.split(";"))
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return mime.lower() or None, charset
