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
cannot read, ``empty_document`` when no text is left. Which formats exist, with their
extensions, media types and versions (``PARSER_VERSIONS``, part of the pipeline
version), and ``parser_for`` are ``_formats``'s tables; this module runs the chosen
parser and judges what it returns.
"""

from __future__ import annotations

from functools import partial
from pathlib import PurePosixPath

from headwater.errors import ItemError
from headwater.pipeline.parse._common import (
    Extracted,
    ParsedDocument,
    ParseOptions,
    binary_reason,
    normalize_text,
    normalize_title,
    reading,
    time_budget,
)
from headwater.pipeline.parse._compressed import (
    COMPRESSION_MEDIA_TYPES,
    compression_of,
    decompress,
    inner_name,
    packed_as_named,
)
from headwater.pipeline.parse._eml import PARSED_METADATA_KEYS
from headwater.pipeline.parse._formats import (
    CODE_EXTENSIONS,
    MAIL_PARSERS,
    PARSER_VERSIONS,
    PARSERS,
    SUPPORTED_EXTENSIONS,
    SUPPORTED_MEDIA_TYPES,
    TEXT_PARSERS,
    parser_for,
)
from headwater.pipeline.parse._members import (
    SEPARATOR,
    ContainerLimits,
    Member,
    MemberFailure,
    container_kind,
    members,
)
from headwater.pipeline.parse._ocr import parse_image, recognize
from headwater.pipeline.parse._pdf import parse_pdf
from headwater.pipeline.parse._sniff import (
    CONTAINER_PARSERS,
    check_not_encrypted_office,
    doc_name_text,
    sniff,
    sniff_text,
    split_media_type,
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
    """Parse ``content``: ``unpacked`` once a compressed file was unpacked (a second
    level is refused), ``attached`` for a message's attachment (it lists its own)."""
    media_type = options.media_types.get(PurePosixPath(name).suffix.lower()) or media_type
    parser = _chosen_parser(content, name, media_type, options)
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
    if parser in TEXT_PARSERS and (why := binary_reason(content, charset)):
        raise ItemError(
            "unsupported_type",
            f"{name!r} ({len(content):,} bytes) is binary, not "
            f"{'plain' if parser == 'text' else parser} text: {why}. "
            "Exclude it in the source's configuration, or give it the extension of its "
            "real format.",
        )
    text, title, metadata = _run_parser(parser, content, charset, options, attached=attached)
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


def _chosen_parser(
    content: bytes, name: str, media_type: str | None, options: ParseOptions
) -> str | None:
    """The parser for ``content``: by name and media type (``parser_for``), then by the
    bytes where the name says nothing, names a container format, or hides compression;
    raises ``encrypted`` for a password-protected Office file."""
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
    return parser


def _run_parser(
    parser: str, content: bytes, charset: str | None, options: ParseOptions, *, attached: bool
) -> tuple[str, str | None, dict[str, str]]:
    """The normalized text, title and metadata ``parser`` reads from ``content`` (its
    failures turned into ``ItemError`` by ``reading``)."""
    with reading(parser):
        result: tuple[str, str | None] | Extracted
        if parser in MAIL_PARSERS:  # attachments: one level, as their own formats
            read = None if attached else partial(_attached, options=options)
            result = MAIL_PARSERS[parser](content, charset, read)
        elif parser == "image":  # only chosen with [parse] ocr on
            result = parse_image(content, options.ocr_language)
        elif parser == "pdf" and options.ocr:
            result = parse_pdf(content, charset, partial(recognize, language=options.ocr_language))
        else:
            result = PARSERS[parser](content, charset)
        if isinstance(result, Extracted):
            raw_text, raw_title, metadata = result.text, result.title, dict(result.metadata)
        else:
            (raw_text, raw_title), metadata = result, {}
        return normalize_text(raw_text), normalize_title(raw_title), metadata


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
