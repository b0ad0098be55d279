"""PDF parser (pypdf): the text of every page, pages separated by a blank line.

An encrypted PDF that does not open with the empty password is ``encrypted``, a corrupt
one ``parse_error``; the title comes from the document information dictionary. Creation and
modification dates are never read.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

from headwater.errors import ItemError
from headwater.pipeline.parse._common import tick

PDF_VERSION = "pdf-1+pypdf"  # with OCR on, the source's version adds OCR_VERSION


def parse_pdf(
    content: bytes, charset: str | None, ocr: Callable[[bytes], str] | None = None
) -> tuple[str, str | None]:
    """A PDF's text and title; with ``ocr``, a page without a text layer is read from its
    images (a section ``# Page N (OCR)``), a page with text never is."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader = PdfReader(io.BytesIO(content), strict=False)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except Exception as exc:  # a missing crypto backend or a malformed /Encrypt
            raise ItemError(
                "parse_error", f"the PDF is encrypted and cannot be read: {exc}"
            ) from exc
        if not opened:
            raise ItemError(
                "encrypted",
                "the PDF is password-protected and cannot be read without the password; "
                "expected an unprotected PDF. Remove the password at the source to index "
                "it, or exclude it in the source's configuration.",
            )
    pages: list[str] = []
    for number, page in enumerate(reader.pages, start=1):
        tick()
        text = page.extract_text() or ""
        if not text.strip() and ocr is not None:
            read = [ocr(image.data) for image in page.images]
            recognized = "\n\n".join(r for r in read if r.strip())
            text = f"# Page {number} (OCR)\n\n{recognized}" if recognized else ""
        pages.append(text)
    title: str | None = None
    info = reader.metadata
    if info is not None and info.title:
        title = str(info.title)
    return "\n\n".join(p.strip() for p in pages if p.strip()), title
