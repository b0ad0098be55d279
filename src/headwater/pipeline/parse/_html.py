"""HTML parser: the page's main text via trafilatura, headings kept as Markdown.

trafilatura drops navigation, footers and boilerplate. For a short page it may find no
main content; then a plain extraction of all visible text (scripts, styles and templates
removed) is used instead. The title is ``og:title``, else ``<title>``, else the first
``<h1>``. Dates and other page metadata never enter the text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from headwater.pipeline.parse._common import decode_text

HTML_VERSION = "html-1+trafilatura"

_INVISIBLE = {"script", "style", "template", "noscript", "svg", "head"}
_BLOCKS = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav",
    "li", "ul", "ol", "table", "tr", "br", "pre", "blockquote", "dd", "dt", "form",
    "h1", "h2", "h3", "h4", "h5", "h6",
}  # fmt: skip
_META_CHARSET = re.compile(rb"<meta[^>]+charset=[\"']?([A-Za-z0-9_.:-]+)", re.IGNORECASE)


class _PageReader(HTMLParser):
    """Collects the title candidates and the visible text of a page in one pass."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.og_title: str | None = None
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self.parts: list[str] = []
        self._hidden = 0
        self._in_title = False
        self._in_h1 = False
        self._heading: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "meta" and values.get("property") == "og:title" and values.get("content"):
            self.og_title = values["content"]
        if tag == "title":
            self._in_title = True
        elif tag in _INVISIBLE:
            self._hidden += 1
        if tag in _BLOCKS:
            self.parts.append("\n\n")
        if tag == "h1":
            self._in_h1 = True
        if re.fullmatch(r"h[1-6]", tag) and not self._hidden:
            self.parts.append("#" * int(tag[1]) + " ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _INVISIBLE and self._hidden:
            self._hidden -= 1
        if tag == "h1":
            self._in_h1 = False
        if tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
            return
        if self._hidden:
            return
        if self._in_h1:
            self.h1_parts.append(data)
        self.parts.append(data)

    def title(self) -> str | None:
        for candidate in (self.og_title, "".join(self.title_parts), "".join(self.h1_parts)):
            if candidate and candidate.strip():
                return candidate
        return None

    def text(self) -> str:
        blocks = "".join(self.parts).split("\n\n")
        lines = (" ".join(block.split()) for block in blocks)
        return "\n\n".join(line for line in lines if line and line.strip("# "))


def parse_html(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """An HTML page's main text and title."""
    import trafilatura

    if charset is None:
        declared = _META_CHARSET.search(content[:4096])
        charset = declared.group(1).decode("ascii") if declared else None
    page = decode_text(content, charset)
    reader = _PageReader()
    reader.feed(page)
    reader.close()
    extracted = trafilatura.extract(
        page,
        output_format="markdown",
        include_formatting=True,
        include_comments=False,
        include_tables=True,
        include_links=False,
        include_images=False,
        with_metadata=False,
        deduplicate=False,
    )
    text = extracted if extracted and extracted.strip() else reader.text()
    return text, reader.title()
