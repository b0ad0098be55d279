"""OCR with Tesseract (``[parse] ocr = true``): images, and PDF pages without a text layer.

The ``tesseract`` command of Debian's ``tesseract-ocr`` package is run as a subprocess
(``tesseract stdin stdout -l <language>``), the image bytes on its standard input, so no
Python binding and no temporary file are needed; it reads PNG, JPEG, TIFF, BMP, GIF and
WebP. Each call is bounded by what is left of the document's time budget (the process
is killed past it: ``too_large``). A missing ``tesseract`` is a non-permanent
``ocr_unavailable`` failure, read again once it is installed. What OCR reads is a
section of its own: ``# Text recognized by OCR`` for an image, ``# Page N (OCR)`` for a
PDF page, so it is never mistaken for a text layer. Tesseract runs with one OpenMP
thread (``OMP_THREAD_LIMIT=1``): its default threads spin-wait on a small machine, and a
page took 11.4 s that way against 1.0 s on one thread here (2 cores); documents are
OCRed side by side instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Final

from headwater.errors import ItemError
from headwater.pipeline.parse._common import remaining_budget

IMAGE_EXTENSIONS: Final = frozenset(
    {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".pnm", ".pbm"}
)
IMAGE_MEDIA_TYPES: Final = frozenset(
    {"image/png", "image/jpeg", "image/tiff", "image/bmp", "image/gif", "image/webp"}
)
MAX_IMAGE_BYTES: Final = 64 * 1024 * 1024


def recognize(image: bytes, language: str) -> str:
    """The text Tesseract reads in ``image`` (encoded bytes), stripped."""
    command = shutil.which("tesseract")
    if command is None:
        raise ItemError(
            "ocr_unavailable",
            "[parse] ocr is on but the `tesseract` command is not installed; install "
            "Debian's tesseract-ocr (apt-get install tesseract-ocr, plus "
            "tesseract-ocr-<lang> for other languages), or set ocr = false.",
            permanent=False,
        )
    if len(image) > MAX_IMAGE_BYTES:
        raise ItemError(
            "too_large",
            f"the image is {len(image):,} bytes; OCR reads images up to {MAX_IMAGE_BYTES:,}",
        )
    try:
        done = subprocess.run(
            [command, "stdin", "stdout", "-l", language],
            input=image,
            capture_output=True,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            timeout=max(remaining_budget(), 1.0),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ItemError(
            "too_large",
            "OCR ran past what was left of the document's time budget ([parse] "
            "time_budget, default 60s; a page takes seconds); raise time_budget, or "
            "exclude the file.",
        ) from exc
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ItemError(
            "parse_error",
            f"Tesseract could not read the image (language {language!r}): "
            f"{why[-1] if why else done.returncode}. Check [parse] ocr_language and that its "
            "tesseract-ocr-<lang> package is installed.",
        )
    return done.stdout.decode("utf-8", "replace").strip()


def parse_image(content: bytes, language: str) -> tuple[str, None]:
    """An image file's text through OCR, as one section."""
    text = recognize(content, language)
    return (f"# Text recognized by OCR\n\n{text}" if text else ""), None
