"""EPUB parser: the chapters of the spine in reading order, read with zipfile and defusedxml.

The archive is unpacked under the zip limits (``_zip.checked_archive``); then
``META-INF/container.xml`` names the package document (OPF), whose ``spine`` lists the
chapters in order and whose ``manifest`` says where each is. Every XHTML chapter is read
like HTML without boilerplate removal (a chapter is all content): visible text, headings
as ``#``. The title is the OPF's ``dc:title``. A chapter that
``META-INF/encryption.xml`` lists as encrypted (DRM) makes the book ``encrypted``;
obfuscated fonts do not matter. ebooklib was not used: it is AGPL-3.0 (Headwater is
Apache-2.0), it parses the package with lxml's default parser, which expands entities
(defusedxml refuses them), and it reads every item of the book, images included.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from typing import Final
from urllib.parse import unquote

from defusedxml import ElementTree

from headwater.errors import ItemError
from headwater.pipeline.parse._common import decode_text, tick
from headwater.pipeline.parse._zip import checked_archive

EPUB_VERSION = "epub-1"

_CONTAINER: Final = "{urn:oasis:names:tc:opendocument:xmlns:container}rootfile"
_OPF: Final = "{http://www.idpf.org/2007/opf}"
_DC_TITLE: Final = "{http://purl.org/dc/elements/1.1/}title"
_CIPHER: Final = "{http://www.w3.org/2001/04/xmlenc#}CipherReference"
_CHAPTER_TYPES: Final = frozenset({"application/xhtml+xml", "text/html"})


def parse_epub(content: bytes, charset: str | None) -> tuple[str, str | None]:
    from headwater.pipeline.parse._html import _PageReader

    archive = checked_archive(content, kind="EPUB")
    with zipfile.ZipFile(io.BytesIO(archive)) as book:
        names = set(book.namelist())
        if "META-INF/container.xml" not in names:
            raise ItemError("parse_error", "the EPUB file has no META-INF/container.xml")
        rootfile = ElementTree.fromstring(book.read("META-INF/container.xml")).find(
            f".//{_CONTAINER}"
        )
        opf_path = rootfile.get("full-path", "") if rootfile is not None else ""
        if opf_path not in names:
            raise ItemError("parse_error", f"the EPUB's package document {opf_path!r} is missing")
        encrypted = _encrypted_paths(book, names)
        opf = ElementTree.fromstring(book.read(opf_path))
        base = posixpath.dirname(opf_path)
        items = {
            item.get("id"): item
            for item in opf.iter(f"{_OPF}item")
            if item.get("id") and item.get("href")
        }
        found_title = opf.find(f".//{_DC_TITLE}")
        title = " ".join((found_title.text or "").split()) if found_title is not None else ""
        chapters: list[str] = []
        for itemref in opf.iter(f"{_OPF}itemref"):
            tick()
            item = items.get(itemref.get("idref"))
            if item is None or item.get("media-type") not in _CHAPTER_TYPES:
                continue
            path = posixpath.normpath(posixpath.join(base, unquote(item.get("href", ""))))
            if path in encrypted:
                raise ItemError(
                    "encrypted",
                    f"the EPUB file's chapter {path!r} is encrypted (DRM) and cannot be read "
                    "without the key. Index a DRM-free copy, or exclude it in the source's "
                    "configuration.",
                )
            if path not in names:
                continue
            reader = _PageReader()
            reader.feed(decode_text(book.read(path), None))
            reader.close()
            text = reader.text()
            if text.strip():
                chapters.append(text)
    return "\n\n".join(chapters), title or None


def _encrypted_paths(book: zipfile.ZipFile, names: set[str]) -> set[str]:
    """Paths ``META-INF/encryption.xml`` lists (fonts among them, which are never read)."""
    if "META-INF/encryption.xml" not in names:
        return set()
    root = ElementTree.fromstring(book.read("META-INF/encryption.xml"))
    return {
        posixpath.normpath(unquote(ref.get("URI", "")))
        for ref in root.iter(_CIPHER)
        if ref.get("URI")
    }
