"""Parse raw bytes into normalized text: one parser per format, chosen by media type.

``parse`` picks a parser by media type first, then by the extension of ``name`` (a
source's ``ParseOptions`` may map more extensions to text or to a media type), runs it
and normalizes the result. A compressed file (``README.gz``) is unpacked under limits
and its inner name decides; a name that says nothing, or names another container
format, yields to the bytes' magic number (``_sniff``). Every failure is an
``ItemError``: ``unsupported_type`` for a format we do not read (a binary file named
``.md`` or ``.txt`` included), ``too_large`` for a zip-based or compressed file that
would unpack past its limits, a table over its row cap or a parse past its time budget,
``encrypted`` for a password-protected file, ``parse_error`` for a file its parser
cannot read, ``empty_document`` when no text is left. ``PARSER_VERSIONS`` is part of the pipeline
version: bump a parser's version whenever its output for the same bytes may change.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import PurePosixPath
from typing import Final

from headwater.errors import ItemError
from headwater.pipeline.parse._attachments import AttachmentReader
from headwater.pipeline.parse._common import (
    Extracted,
    ParsedDocument,
    ParseOptions,
    ParserFunc,
    binary_reason,
    normalize_text,
    normalize_title,
    reading,
    time_budget,
)
from headwater.pipeline.parse._compressed import (
    COMPRESSED_VERSION,
    COMPRESSION_MEDIA_TYPES,
    COMPRESSION_SUFFIXES,
    compression_of,
    decompress,
    inner_name,
    packed_as_named,
)
from headwater.pipeline.parse._data import (
    JSON_VERSION,
    JSONL_VERSION,
    XML_VERSION,
    parse_json,
    parse_jsonl,
    parse_xml,
)
from headwater.pipeline.parse._docx import DOCX_VERSION, parse_docx
from headwater.pipeline.parse._eml import EML_VERSION, PARSED_METADATA_KEYS, parse_eml
from headwater.pipeline.parse._epub import EPUB_VERSION, parse_epub
from headwater.pipeline.parse._html import HTML_VERSION, parse_html
from headwater.pipeline.parse._markup import (
    ASCIIDOC_VERSION,
    ORG_VERSION,
    RST_VERSION,
    parse_asciidoc,
    parse_org,
    parse_rst,
)
from headwater.pipeline.parse._members import (
    SEPARATOR,
    ContainerLimits,
    Member,
    MemberFailure,
    container_kind,
    members,
)
from headwater.pipeline.parse._msg import MSG_VERSION, parse_msg
from headwater.pipeline.parse._ocr import (
    IMAGE_EXTENSIONS,
    IMAGE_MEDIA_TYPES,
    parse_image,
    recognize,
)
from headwater.pipeline.parse._odf import (
    ODP_VERSION,
    ODS_VERSION,
    ODT_VERSION,
    parse_odp,
    parse_ods,
    parse_odt,
)
from headwater.pipeline.parse._pdf import PDF_VERSION, parse_pdf
from headwater.pipeline.parse._pptx import PPTX_VERSION, parse_pptx
from headwater.pipeline.parse._rtf import RTF_VERSION, parse_rtf
from headwater.pipeline.parse._sniff import (
    CONTAINER_PARSERS,
    check_not_encrypted_office,
    doc_name_text,
    sniff,
    sniff_text,
    split_media_type,
)
from headwater.pipeline.parse._table import (
    CSV_VERSION,
    XLSX_VERSION,
    parse_csv,
    parse_tsv,
    parse_xlsx,
)
from headwater.pipeline.parse._text import (
    MARKDOWN_VERSION,
    TEXT_VERSION,
    parse_markdown,
    parse_text,
)

__all__ = [
    "CODE_EXTENSIONS",
    "PARSED_METADATA_KEYS",
    "PARSER_VERSIONS",
    "SEPARATOR",
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_MEDIA_TYPES",
    "ContainerLimits",
    "Member",
    "MemberFailure",
    "ParseOptions",
    "ParsedDocument",
    "container_kind",
    "members",
    "normalize_text",
    "parse",
    "parser_for",
]

MailParserFunc = Callable[[bytes, str | None, AttachmentReader | None], Extracted]

PARSER_VERSIONS: Final[dict[str, str]] = {
    "text": TEXT_VERSION,
    "markdown": MARKDOWN_VERSION,
    "html": HTML_VERSION,
    "pdf": PDF_VERSION,
    "docx": DOCX_VERSION,
    "code": "code-1",
    "yaml": "yaml-1",
    "rst": RST_VERSION,
    "asciidoc": ASCIIDOC_VERSION,
    "org": ORG_VERSION,
    "json": JSON_VERSION,
    "jsonl": JSONL_VERSION,
    "xml": XML_VERSION,
    "csv": CSV_VERSION,
    "tsv": CSV_VERSION,
    "xlsx": XLSX_VERSION,
    "pptx": PPTX_VERSION,
    "eml": EML_VERSION,
    "compressed": COMPRESSED_VERSION,
    "odt": ODT_VERSION,
    "ods": ODS_VERSION,
    "odp": ODP_VERSION,
    "rtf": RTF_VERSION,
    "epub": EPUB_VERSION,
    "msg": MSG_VERSION,
}

_TEXT_PARSERS: Final = frozenset(
    {"text", "markdown", "html", "code", "yaml", "rst", "asciidoc", "org", "json", "jsonl"}
    | {"xml", "csv", "tsv"}
)
"""Parsers that read the bytes as text: a binary file is refused before they run."""

# fmt: off
CODE_EXTENSIONS: Final = frozenset({
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".kts",
    ".scala", ".groovy", ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".cs",
    ".fs", ".go", ".rs", ".swift", ".m", ".mm", ".rb", ".php", ".pl", ".pm", ".lua", ".r",
    ".jl", ".hs", ".ml", ".mli", ".ex", ".exs", ".erl", ".hrl", ".clj", ".cljs", ".dart",
    ".elm", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".sql", ".css", ".scss",
    ".sass", ".less", ".vue", ".svelte", ".tf", ".proto", ".graphql", ".cmake", ".mk", ".el",
    ".vim", ".awk", ".sed", ".cocci", ".perl", ".tcl", ".tex", ".texi", ".patch", ".diff",
    ".in", ".po", ".pot", ".toml", ".ini", ".cfg", ".conf", ".properties", ".service",
    ".socket", ".timer", ".desktop", ".bashrc", ".bash_profile", ".bash_logout", ".profile",
    ".zshrc",
})
# fmt: on
"""Source code and configuration read as plain text by the ``code`` parser."""

_MAIL_PARSERS: Final[dict[str, MailParserFunc]] = {"eml": parse_eml, "msg": parse_msg}
"""Parsers of messages: they take a reader for their attachments (None: list them)."""

_PARSERS: Final[dict[str, ParserFunc]] = {
    "text": parse_text,
    "markdown": parse_markdown,
    "html": parse_html,
    "pdf": parse_pdf,
    "docx": parse_docx,
    "code": parse_text,
    "yaml": parse_text,
    "rst": parse_rst,
    "asciidoc": parse_asciidoc,
    "org": parse_org,
    "json": parse_json,
    "jsonl": parse_jsonl,
    "xml": parse_xml,
    "csv": parse_csv,
    "tsv": parse_tsv,
    "xlsx": parse_xlsx,
    "pptx": parse_pptx,
    "eml": parse_eml,
    "odt": parse_odt,
    "ods": parse_ods,
    "odp": parse_odp,
    "rtf": parse_rtf,
    "epub": parse_epub,
    "msg": parse_msg,
}

SUPPORTED_EXTENSIONS: Final[dict[str, str]] = {
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".rst": "rst",
    ".rest": "rst",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".org": "org",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".xml": "xml",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".pptx": "pptx",
    ".eml": "eml",
    ".odt": "odt",
    ".ods": "ods",
    ".odp": "odp",
    ".rtf": "rtf",
    ".epub": "epub",
    ".msg": "msg",
    **dict.fromkeys(COMPRESSION_SUFFIXES, "compressed"),
    **dict.fromkeys(CODE_EXTENSIONS, "code"),
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
    "text/x-rst": "rst",
    "text/asciidoc": "asciidoc",
    "text/org": "org",
    "application/json": "json",
    "application/x-ndjson": "jsonl",
    "application/jsonl": "jsonl",
    "application/xml": "xml",
    "text/xml": "xml",
    "application/yaml": "yaml",
    "application/x-yaml": "yaml",
    "text/yaml": "yaml",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "message/rfc822": "eml",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "application/epub+zip": "epub",
    "application/vnd.ms-outlook": "msg",
    **dict.fromkeys(COMPRESSION_MEDIA_TYPES, "compressed"),
}


def parser_for(
    name: str, media_type: str | None, options: ParseOptions | None = None
) -> str | None:
    """The parser name for a file, or None when no parser reads it.

    A media type that ``options`` gives the extension decides first, then a specific media
    type; a generic one (``application/octet-stream``, or a ``text/plain`` that a server
    sends for ``.md`` or ``.csv`` files) defers to the extension, and an extension listed
    in ``options.text_extensions`` is plain text.
    """
    options = options or ParseOptions()
    suffix = PurePosixPath(name).suffix.lower()
    mime, _ = split_media_type(options.media_types.get(suffix) or media_type)
    by_media = SUPPORTED_MEDIA_TYPES.get(mime) if mime else None
    if suffix in options.text_extensions and by_media in (None, "text"):
        return "text"
    by_extension = SUPPORTED_EXTENSIONS.get(suffix)
    if by_media == "text" and by_extension in _TEXT_PARSERS:
        return by_extension
    image = mime in IMAGE_MEDIA_TYPES or (suffix in IMAGE_EXTENSIONS and not by_media)
    if options.ocr and not (by_media or by_extension) and image:  # images only with OCR
        return "image"
    return by_media or by_extension


def parse(
    content: bytes,
    *,
    name: str,
    media_type: str | None,
    options: ParseOptions | None = None,
) -> ParsedDocument:
    """Parse one file's bytes into normalized text and a title.

    Raises ``ItemError`` (``unsupported_type``, ``too_large``, ``encrypted``,
    ``parse_error`` or ``empty_document``, all permanent); never anything else.
    """
    options = options or ParseOptions()
    with time_budget(options.time_budget_s, options.clock):
        return _parse(content, name, media_type, options, unpacked=False)


def _parse(
    content: bytes,
    name: str,
    media_type: str | None,
    options: ParseOptions,
    *,
    unpacked: bool,
    attached: bool = False,
) -> ParsedDocument:
    media_type = options.media_types.get(PurePosixPath(name).suffix.lower()) or media_type
    parser = parser_for(name, media_type, options)
    named = parser is not None
    parser = parser or doc_name_text(name, media_type)
    if parser != "compressed" and packed_as_named(name, content):
        parser = "compressed"  # and the media type that came with it is the inside's
    if parser != "compressed" and (not named or parser in CONTAINER_PARSERS):
        check_not_encrypted_office(content, (parser or "Office").upper())
        parser = sniff(content) or parser  # no name, or a container named as another
    if parser is None and not PurePosixPath(name).name.startswith("."):
        parser = sniff_text(content, media_type)  # a suffix that names no format: its bytes
    if parser == "compressed":
        if unpacked:
            raise ItemError(
                "unsupported_type",
                f"{name!r} is compressed twice; one level of compression is read. Unpack "
                "it once at the source, or exclude it.",
            )
        return _parse_compressed(
            content, name=name, media_type=media_type, options=options, attached=attached
        )
    if parser is None:
        raise ItemError(
            "unsupported_type",
            f"{name!r} (media type {media_type or 'unknown'}) is not a supported format; "
            f"expected one of {', '.join(sorted(set(SUPPORTED_EXTENSIONS) - CODE_EXTENSIONS))}"
            ", source code, or a name without an extension. List the extension in [parse] "
            "text_extensions to read it as text, or exclude it in the source's "
            "configuration to skip it quietly.",
        )
    _, charset = split_media_type(media_type)
    if parser in _TEXT_PARSERS and (why := binary_reason(content, charset)):
        raise ItemError(
            "unsupported_type",
            f"{name!r} ({len(content):,} bytes) is binary, not "
            f"{'plain' if parser == 'text' else parser} text: {why}. "
            "Exclude it in the source's configuration, or give it the extension of its "
            "real format.",
        )
    with reading(parser):
        result: tuple[str, str | None] | Extracted
        if parser in _MAIL_PARSERS:  # attachments: one level, as their own formats
            read = None if attached else partial(_attached, options=options)
            result = _MAIL_PARSERS[parser](content, charset, read)
        elif parser == "image":  # only chosen with [parse] ocr on
            result = parse_image(content, options.ocr_language)
        elif parser == "pdf" and options.ocr:
            result = parse_pdf(content, charset, partial(recognize, language=options.ocr_language))
        else:
            result = _PARSERS[parser](content, charset)
        if isinstance(result, Extracted):
            raw_text, raw_title, metadata = result.text, result.title, dict(result.metadata)
        else:
            (raw_text, raw_title), metadata = result, {}
        text = normalize_text(raw_text)
        title = normalize_title(raw_title)
    if not text.strip():
        raise ItemError(
            "empty_document",
            f"{name!r} has no text after parsing with the {parser} parser ("
            + (
                "a scanned PDF without a text layer? [parse] ocr = true reads it"
                if parser == "pdf" and not options.ocr
                else "an empty file?"
            )
            + "); it is read again when it changes, or exclude it.",
        )
    return ParsedDocument(text=text, title=title, parser=parser, metadata=metadata)


def _attached(name: str, content: bytes, media_type: str | None, *, options: ParseOptions) -> str:
    """The text of a message's attachment; a message attached lists its own."""
    return _parse(content, name, media_type, options, unpacked=False, attached=True).text


def _parse_compressed(
    content: bytes, *, name: str, media_type: str | None, options: ParseOptions, attached: bool
) -> ParsedDocument:
    """Unpack a ``.gz``/``.bz2``/``.xz`` file and parse it as its inner name says."""
    mime, _ = split_media_type(media_type)
    method = compression_of(name, mime) or "gzip"
    inner = inner_name(name)
    if inner == name:  # an extension [parse] media_types calls compressed: drop it too
        inner = str(PurePosixPath(name).with_suffix(""))
    with reading("compressed"):
        unpacked = decompress(content, method)
    inner_media = None if mime in COMPRESSION_MEDIA_TYPES or mime is None else media_type
    try:
        return _parse(unpacked, inner, inner_media, options, unpacked=True, attached=attached)
    except ItemError as exc:
        raise ItemError(
            exc.error_class, f"{name!r}, unpacked: {exc}", permanent=exc.permanent
        ) from exc
