"""A retrieval corpus of real command-reference pages: this machine's section-1 man pages.

The idea: short reference pages with a one-line NAME description are exactly where
hybrid search used to lose to keyword search, and every Debian-like machine has
thousands of them. ``apropos -l -s 1 .`` lists the pages and their descriptions; a page
is kept when its description has at least four words and is unique, and its source is a
real page (not a ``.so`` alias). Pages are ordered by ``sha256(name)`` and the first
``--docs`` that render (``groff -Tutf8 -man``, no hyphenation, wide lines) to at least
``MIN_WORDS`` words are taken, each cut to its first ``MAX_WORDS`` words on a line
boundary. The selection depends only on which pages are installed.

    .venv/bin/python bench/retrieval/corpus.py --docs 1000 --out bench/out/retrieval/corpus.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

MAN1 = Path("/usr/share/man/man1")
MIN_WORDS = 60
MAX_WORDS = 300
_WHATIS = re.compile(r"^(?P<name>\S+) \(1\)\s+- (?P<description>.+)$")
_HEADING = re.compile(r"^[A-Z][A-Z ]+$")


def listed_pages() -> dict[str, str]:
    """Section-1 page name → one-line description, for unique descriptions of 4+ words."""
    out = subprocess.run(
        ["apropos", "-l", "-s", "1", "."], capture_output=True, text=True, check=False
    ).stdout
    pages: dict[str, str] = {}
    seen: dict[str, int] = {}
    for line in out.splitlines():
        match = _WHATIS.match(line.strip())
        if not match:
            continue
        description = " ".join(match["description"].split())
        if len(description.split()) < 4:
            continue
        pages.setdefault(match["name"], description)
        key = description.lower()
        seen[key] = seen.get(key, 0) + 1
    return {n: d for n, d in pages.items() if seen[d.lower()] == 1}


def render(path: Path) -> str | None:
    """The page as plain text, or None when it is an alias or fails to render."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        source = handle.read()
    if source.lstrip().startswith(b".so "):
        return None
    result = subprocess.run(
        ["groff", "-Tutf8", "-man", "-rLL=200n", "-rHY=0", "-P-cbou"],
        input=source,
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        return None
    text = result.stdout.decode("utf-8", "replace")
    lines = [line.rstrip() for line in text.splitlines()]
    # Drop the running header and footer lines ("LS(1)   User Commands   LS(1)").
    return "\n".join(lines[1:-1]).strip("\n")


def cut(text: str, max_words: int) -> str:
    """The first lines of ``text`` holding at most ``max_words`` words (blank runs squeezed)."""
    kept: list[str] = []
    words = 0
    for line in text.splitlines():
        if not line.strip():
            if kept and kept[-1]:
                kept.append("")
            continue
        count = len(line.split())
        if words + count > max_words and kept:
            break
        kept.append(" ".join(line.split()) if not _HEADING.match(line.strip()) else line.strip())
        words += count
    return "\n".join(kept).strip()


def section(text: str, name: str) -> str:
    """The body of the section headed ``name`` (e.g. ``DESCRIPTION``), flattened."""
    lines = text.splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if _HEADING.match(line.strip()) and not line.startswith(" "):
            if inside:
                break
            inside = line.strip() == name
            continue
        if inside:
            out.append(line.strip())
    return " ".join(" ".join(out).split())


def as_markdown(page: dict[str, str]) -> dict[str, str]:
    """The page with its name as a ``#`` title and its section lines as ``##`` headings,
    each heading a paragraph of its own."""
    lines = [
        f"\n## {ln.strip()}\n" if _HEADING.match(ln.strip()) else ln
        for ln in page["text"].splitlines()
    ]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return {**page, "text": f"# {page['name']}\n\n{body}"}


def pages(limit: int) -> Iterator[dict[str, str]]:
    listed = listed_pages()
    names = sorted(listed, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    taken = 0
    for name in names:
        if taken >= limit:
            return
        path = next((p for p in (MAN1 / f"{name}.1.gz", MAN1 / f"{name}.1") if p.is_file()), None)
        if path is None:
            continue
        text = render(path)
        if text is None or len(text.split()) < MIN_WORDS:
            continue
        body = cut(text, MAX_WORDS)
        yield {
            "name": name,
            "description": listed[name],
            "text": body,
            "description_section": section(body, "DESCRIPTION"),
        }
        taken += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("bench/out/retrieval/corpus.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with args.out.open("w", encoding="utf-8") as handle:
        for page in pages(args.docs):
            handle.write(json.dumps(page, ensure_ascii=False) + "\n")
            count += 1
    print(f"wrote {count} pages to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
