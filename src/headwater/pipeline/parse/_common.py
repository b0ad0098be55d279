"""What every parser shares: the result type, text normalization and byte decoding.

A parser turns raw bytes into normalized text and an optional title. Normalization makes
the text (and so its checksum) independent of incidental encoding choices: NFC, ``\\n``
line ends, no trailing spaces, one blank line between paragraphs.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from headwater.errors import ItemError

OCR_VERSION = "ocr-1+tesseract"
"""The OCR's version: in the content version of a source with ``ocr`` on."""

_TRAILING_SPACE = re.compile(r"[ \t\u00a0]+$", re.MULTILINE)
_MANY_BLANK_LINES = re.compile(r"\n{3,}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class ParsedDocument:
    """Normalized text of one document, its title if the format carries one, the name of
    the parser that produced it (a key of ``PARSER_VERSIONS``) and what the format says
    about the document (an e-mail's ``from``, ``subject``…), which becomes metadata."""

    text: str
    title: str | None
    parser: str
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ParseOptions:
    """What a workspace or source says about its files beyond their names.

    ``text_extensions`` (lower case, with dot) are read as plain text; ``media_types``
    maps an extension to the media type its files have (``".tpl"`` → ``"text/html"``),
    which then decides like a media type the source sent. Both enter the source's
    content version (``describe``), so changing them reads the source's files again.
    """

    text_extensions: frozenset[str] = frozenset()
    media_types: Mapping[str, str] = field(default_factory=dict)
    time_budget_s: float = 60.0
    """Seconds one document's parse may take (checked as parsers go); not in the version."""
    metadata_only_on_failure: bool = True
    ocr: bool = False
    """Read images, and PDF pages without a text layer, with Tesseract (``_ocr``)."""
    ocr_language: str = "eng"
    """Tesseract's ``-l``: ``"eng"``, ``"deu"``, ``"eng+deu"``."""
    """A file too large, encrypted or unparseable is indexed by its metadata (not in the
    version: it applies to files as they are read next)."""
    clock: Callable[[], float] | None = field(default=None, compare=False, repr=False)
    """The clock the budget is measured on (``time.monotonic`` when None): tests inject one."""

    def describe(self) -> dict[str, object]:
        """The options as plain data for the content version; empty when default."""
        described: dict[str, object] = {}
        if self.text_extensions:
            described["text_extensions"] = sorted(self.text_extensions)
        if self.media_types:
            described["media_types"] = dict(sorted(self.media_types.items()))
        if self.ocr:  # new output for images and scanned PDFs: read them again
            described["ocr"] = [OCR_VERSION, self.ocr_language]
        return described


@dataclass(frozen=True)
class Extracted:
    """What a parser returns when its format carries metadata besides text and title."""

    text: str
    title: str | None
    metadata: Mapping[str, str]


def normalize_text(text: str) -> str:
    """NFC, ``\\n`` line ends, no control characters or trailing spaces; runs of blank
    lines collapse to one (paragraphs stay paragraphs, layout noise goes)."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    text = _CONTROL.sub("", text)
    text = _TRAILING_SPACE.sub("", text)
    text = _MANY_BLANK_LINES.sub("\n\n", text)
    return text.strip("\n")


def normalize_title(title: str | None) -> str | None:
    """One line of NFC text, or None when nothing is left."""
    if title is None:
        return None
    cleaned = " ".join(unicodedata.normalize("NFC", title).split())
    return cleaned or None


def decode_text(content: bytes, charset: str | None = None) -> str:
    """Decode bytes: a BOM or a declared charset wins, then UTF-8, then detection.

    ``charset-normalizer`` recognizes non-Latin legacy encodings; Western text falls back
    to cp1252, and latin-1 (which decodes any byte string) is the last resort.
    """
    if content.startswith(b"\xef\xbb\xbf"):
        return content[3:].decode("utf-8", errors="replace")
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        return content.decode("utf-16", errors="replace")
    if charset:
        try:
            return content.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    high_bytes = sum(1 for byte in content[:65536] if byte > 127)
    best = from_bytes(content).best() if high_bytes >= 16 else None
    if best is not None and _mostly_non_latin(str(best)):
        return str(best)
    try:
        return content.decode("cp1252")
    except UnicodeDecodeError:
        return content.decode("latin-1")


_SNIFF_BYTES = 8192
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\v\x1b")  # ESC: colour codes in logs


def binary_reason(content: bytes, charset: str | None = None) -> str | None:
    """Why ``content`` is not text, judged on its first 8 KiB; None when it may be text.

    Binary when it has a NUL byte, when over 10 % of its bytes are control characters,
    or when it is not UTF-8 and over 1 % are. Text in UTF-16 or UTF-32 (a BOM, or a
    declared ``charset``) is full of NUL bytes and is not judged.
    """
    wide = (charset or "").lower().replace("-", "").replace("_", "")
    if wide.startswith(("utf16", "utf32", "ucs2", "ucs4")):
        return None
    if content.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return None
    head = content[:_SNIFF_BYTES]
    if not head:
        return None
    if b"\x00" in head:
        return "it has NUL bytes"
    controls = sum(1 for byte in head if (byte < 32 or byte == 127) and byte not in _TEXT_CONTROLS)
    share = controls / len(head)
    if share > 0.10:
        return f"{share:.0%} of its first bytes are control characters"
    if share > 0.01:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 3:  # not just a character cut at the sniff limit
                return f"it is not UTF-8 and {share:.0%} of its first bytes are control characters"
    return None


def _mostly_non_latin(text: str) -> bool:
    """True when most non-ASCII letters are of a non-Latin script (Cyrillic, Greek, CJK…).

    Detection is reliable for those scripts given enough non-ASCII bytes; for Western
    text it often picks a wrong Latin code page, so Western bytes are read as cp1252.
    """
    letters = [c for c in text if ord(c) > 127 and c.isalpha()]
    if not letters:
        return False
    latin = sum(1 for c in letters if unicodedata.name(c, "").startswith("LATIN"))
    return latin < len(letters) / 2


@contextmanager
def reading(parser: str) -> Iterator[None]:
    """Turn anything a third-party reader raises into ``ItemError("parse_error")``.

    Parsers read untrusted files with libraries that raise anything from ``KeyError`` to
    ``RecursionError``; one bad file must become one failure record, never a crash, so
    this is the one place where catching broad exceptions is right.
    """
    try:
        yield
    except ItemError:
        raise
    except (Exception, RecursionError) as exc:
        detail = str(exc) or type(exc).__name__
        raise ItemError(
            "parse_error", f"the {parser} parser could not read this file: {detail}"
        ) from exc


@dataclass
class _Deadline:
    clock: Callable[[], float]
    start: float
    seconds: float


_DEADLINE: ContextVar[_Deadline | None] = ContextVar("headwater_parse_deadline", default=None)


@contextmanager
def time_budget(seconds: float, clock: Callable[[], float] | None = None) -> Iterator[None]:
    """Bound the parse run inside the block to ``seconds`` on ``clock``: ``tick`` raises
    past it. A budget already running (a compressed file's inner parse) is kept."""
    if _DEADLINE.get() is not None:
        yield
        return
    clock = clock or time.monotonic
    token = _DEADLINE.set(_Deadline(clock, clock(), seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def tick() -> None:
    """``ItemError("too_large")`` when the running parse is past its time budget.

    Parsers call it in their loops (rows, paragraphs, slides, pages, parts), so a file
    whose reading runs long stops there: cooperative, no thread or signal."""
    deadline = _DEADLINE.get()
    if deadline is not None and deadline.clock() - deadline.start > deadline.seconds:
        raise ItemError(
            "too_large",
            f"parsing took more than the time budget of {deadline.seconds:g} s a document "
            "and stopped. It is not read; exclude it in the source's configuration, or "
            "split the document.",
        )


def remaining_budget() -> float:
    """Seconds left of the running parse's time budget (60 when none runs)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return 60.0
    return deadline.seconds - (deadline.clock() - deadline.start)


ParserFunc = Callable[[bytes, str | None], tuple[str, str | None] | Extracted]
"""``(content, charset) -> (raw text, title)`` or ``Extracted``; the caller normalizes."""
