"""What a file is when its name does not say: documentation names and magic numbers.

A name without an extension (``README``, ``Makefile``, an S3 key) or a documentation
name whose suffix names no format (``README.Debian``) is plain text when its media type
says nothing more (``doc_name_text``); its bytes still decide whether it is text.

A few magic numbers pick the parser when the extension is missing, unknown or names
another container format: ``%PDF-`` is PDF, ``{\\rtf`` is RTF, a zip holding
``[Content_Types].xml`` is the OOXML format of its main part (``word/document.xml`` →
DOCX, ``xl/workbook.xml`` → XLSX, ``ppt/presentation.xml`` → PPTX), and a zip whose
``mimetype`` entry names an OpenDocument or EPUB type is that. A Compound File (OLE,
``d0cf11e0``) holding an ``EncryptedPackage`` stream is how Office saves a
password-protected DOCX, XLSX or PPTX: ``encrypted``. Only the zip's central directory
is read (no entry is inflated but ``mimetype``, which ODF and EPUB store uncompressed).

A name whose suffix names no format (``sources.list``, ``MORE.STUFF``, ``tests.b``) is
read by what its bytes are (``sniff_text``): UTF-8 text is plain text, an XML or HTML
document is parsed as one, and text that is no prose (PostScript, a PEM key or
certificate, an SVG image) stays unsupported, like every binary file.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath
from typing import Final

from headwater.errors import ItemError

CFB_MAGIC: Final = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE: Final = "EncryptedPackage".encode("utf-16-le")

CONTAINER_PARSERS: Final = frozenset(
    {"pdf", "rtf", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub"}
)
"""Parsers of formats with a magic number: a file named as one but holding another is
read as what it holds."""

_OOXML_MAIN: Final = {
    "word/document.xml": "docx",
    "xl/workbook.xml": "xlsx",
    "ppt/presentation.xml": "pptx",
}
_ZIP_MIMETYPES: Final = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/epub+zip": "epub",
}
_MAX_MIMETYPE_BYTES: Final = 200

_NOT_PROSE: Final = (b"%!PS", b"%!Adobe", b"-----BEGIN ", b"---- BEGIN SSH2", b"%!FontType")
"""Text formats that are no document: PostScript, PEM and SSH keys, certificates, fonts."""
_XML: Final = re.compile(rb"\A\s*<\?xml[\s?]", re.IGNORECASE)
_HTML: Final = re.compile(rb"\A\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html[\s>])", re.I | re.S)
_SVG: Final = re.compile(rb"<svg[\s>]", re.IGNORECASE)
_SNIFF_HEAD: Final = 8192


def sniff(content: bytes) -> str | None:
    """The parser the bytes call for, or None when no magic number is recognized."""
    head = content[:1024].lstrip(b"\xef\xbb\xbf")
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.lstrip().startswith(b"{\\rtf"):
        return "rtf"
    if content.startswith(b"PK\x03\x04"):
        return _zip_kind(content)
    return None


def check_not_encrypted_office(content: bytes, kind: str) -> None:
    """``ItemError("encrypted")`` for a Compound File with an ``EncryptedPackage``: the
    container Office writes for a DOCX, XLSX or PPTX saved with a password."""
    if content.startswith(CFB_MAGIC) and _ENCRYPTED_PACKAGE in content:
        raise ItemError(
            "encrypted",
            f"the {kind} file is password-protected (an encrypted Office package) and "
            "cannot be read without the password. Remove the password at the source to "
            "index it, or exclude it in the source's configuration.",
        )


def _zip_kind(content: bytes) -> str | None:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            names = set(archive.namelist())
            if "[Content_Types].xml" in names:
                return next((kind for part, kind in _OOXML_MAIN.items() if part in names), None)
            info = archive.getinfo("mimetype") if "mimetype" in names else None
            if info is None or info.file_size > _MAX_MIMETYPE_BYTES:
                return None
            mimetype = archive.read(info).decode("ascii", errors="replace").strip()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return None
    return _ZIP_MIMETYPES.get(mimetype)


# fmt: off
_TEXT_NAMES: Final = frozenset({
    "readme", "news", "changelog", "changes", "history", "copyright", "copying", "license",
    "licence", "authors", "contributors", "credits", "thanks", "todo", "install", "bugs",
    "faq", "notice", "hacking", "maintainers",
})
# fmt: on
"""Stems of documentation files whose suffix says nothing (``README.Debian``)."""


def doc_name_text(name: str, media_type: str | None) -> str | None:
    """``"text"`` for a name without an extension (``README``, ``NEWS``, ``LICENSE``), or
    the name of a documentation file with a suffix that names no format
    (``README.Debian``, ``changelog.Debian``, ``git-p4.README``), whose media type says
    nothing more specific: read as plain text, and refused as binary by ``parse``
    (``binary_reason``) when its bytes are not text. Hidden files (``.gitignore``) are
    not documents: they stay unsupported."""
    mime, _ = split_media_type(media_type)
    generic = mime is None or mime == "application/octet-stream" or mime.startswith("text/")
    path = PurePosixPath(name)
    if not generic or path.name.startswith("."):
        return None
    parts = {part.lower() for part in path.name.split(".")}
    return "text" if not path.suffix or parts & _TEXT_NAMES else None


def split_media_type(media_type: str | None) -> tuple[str | None, str | None]:
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


def sniff_text(content: bytes, media_type: str | None) -> str | None:
    """The parser for the bytes of a file whose name names no format: ``"xml"`` or
    ``"html"`` for such a document, ``"text"`` for other UTF-8 text (empty included), None
    for anything else (binary, another encoding, PostScript, PEM, SVG) or when the media
    type says something specific. The caller still refuses binary bytes as text."""
    mime, _ = split_media_type(media_type)
    if not (mime is None or mime == "application/octet-stream" or mime.startswith("text/")):
        return None
    head = content[:_SNIFF_HEAD].lstrip(b"\xef\xbb\xbf")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3 or len(content) <= _SNIFF_HEAD:  # not a cut character
            return None
    if b"\x00" in head or head.lstrip().startswith(_NOT_PROSE):
        return None
    if _XML.match(head):
        return None if _SVG.search(head[:2048]) else "xml"
    if _SVG.match(head.lstrip()):
        return None
    return "html" if _HTML.match(head) else "text"
