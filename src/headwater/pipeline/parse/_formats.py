"""Which parser reads a file: the format tables and ``parser_for``.

Every format Headwater reads is a row here: its parser function, its version (part of
the pipeline version: bump it whenever the parser's output for the same bytes may
change), the extensions and media types that name it. ``parser_for`` turns a file's name
and media type, with a source's ``[parse]`` options, into a parser name; running the
parser and what a failure means are the package's (``headwater.pipeline.parse``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Final

from headwater.pipeline.parse._attachments import AttachmentReader
from headwater.pipeline.parse._common import Extracted, ParseOptions, ParserFunc
from headwater.pipeline.parse._compressed import (
    COMPRESSED_VERSION,
    COMPRESSION_MEDIA_TYPES,
    COMPRESSION_SUFFIXES,
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
from headwater.pipeline.parse._eml import EML_VERSION, parse_eml
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
from headwater.pipeline.parse._msg import MSG_VERSION, parse_msg
from headwater.pipeline.parse._ocr import IMAGE_EXTENSIONS, IMAGE_MEDIA_TYPES
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
from headwater.pipeline.parse._sniff import split_media_type
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

TEXT_PARSERS: Final = frozenset(
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

MAIL_PARSERS: Final[dict[str, MailParserFunc]] = {"eml": parse_eml, "msg": parse_msg}
"""Parsers of messages: they take a reader for their attachments (None: list them)."""

PARSERS: Final[dict[str, ParserFunc]] = {
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
    if by_media == "text" and by_extension in TEXT_PARSERS:
        return by_extension
    image = mime in IMAGE_MEDIA_TYPES or (suffix in IMAGE_EXTENSIONS and not by_media)
    if options.ocr and not (by_media or by_extension) and image:  # images only with OCR
        return "image"
    return by_media or by_extension
