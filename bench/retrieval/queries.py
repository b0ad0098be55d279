"""Labelled queries for the man-page corpus, three kinds, generated deterministically.

- ``description``: the page's own one-line NAME description, verbatim (an exact phrase).
- ``sentence``: the first sentence of the page's DESCRIPTION section with 8 to 30 words
  that is not the NAME line and occurs in no other page (a distinctive sentence).
- ``paraphrase``: the description rewritten as a user would ask for it: words swapped
  for the synonyms in ``SYNONYMS`` (hand-written, about 80 entries), articles dropped,
  and one of ``TEMPLATES`` (picked by ``sha256(name)``) wrapped around it. A description
  none of whose words has a synonym yields no paraphrase, so a paraphrase always differs
  from the exact text.

Each query's one relevant document is its page.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SYNONYMS: dict[str, str] = {
    "list": "show",
    "display": "show",
    "print": "output",
    "show": "display",
    "directory": "folder",
    "directories": "folders",
    "file": "document",
    "files": "documents",
    "create": "make",
    "remove": "delete",
    "delete": "erase",
    "copy": "duplicate",
    "move": "relocate",
    "rename": "change the name of",
    "compress": "shrink",
    "decompress": "unpack",
    "uncompress": "unpack",
    "extract": "pull out",
    "convert": "transform",
    "converts": "transforms",
    "generate": "produce",
    "generates": "produces",
    "manage": "administer",
    "manipulate": "edit",
    "modify": "change",
    "change": "alter",
    "check": "verify",
    "verify": "validate",
    "test": "check",
    "search": "look for",
    "find": "locate",
    "read": "parse",
    "write": "save",
    "send": "transmit",
    "receive": "get",
    "network": "net",
    "user": "account",
    "users": "accounts",
    "password": "passphrase",
    "key": "secret",
    "keys": "secrets",
    "information": "details",
    "info": "details",
    "utility": "tool",
    "program": "tool",
    "command": "tool",
    "tool": "utility",
    "run": "execute",
    "execute": "run",
    "start": "launch",
    "stop": "halt",
    "kill": "terminate",
    "process": "task",
    "processes": "tasks",
    "system": "machine",
    "server": "daemon",
    "client": "frontend",
    "package": "bundle",
    "packages": "bundles",
    "library": "lib",
    "database": "db",
    "configuration": "settings",
    "config": "settings",
    "format": "layout",
    "output": "result",
    "input": "incoming data",
    "data": "content",
    "text": "plain text",
    "image": "picture",
    "images": "pictures",
    "archive": "bundle",
    "terminal": "console",
    "disk": "drive",
    "memory": "RAM",
    "error": "failure",
    "errors": "failures",
    "message": "notice",
    "messages": "notices",
    "simple": "basic",
    "interactive": "interactively driven",
    "version": "release",
    "report": "summary",
    "query": "ask",
    "install": "set up",
    "update": "refresh",
    "build": "compile",
    "script": "program",
    "scripts": "programs",
    "manual": "handbook",
    "pages": "entries",
}
TEMPLATES: Sequence[str] = (
    "how do I {}",
    "which command can {}",
    "a tool to {}",
    "what program does this: {}",
    "{}?",
    "looking for something to {}",
)
_ARTICLES = {"a", "an", "the"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Query:
    kind: str
    text: str
    relevant: str  # the page name


def paraphrase(name: str, description: str) -> str | None:
    """The description in other words, or None when no word of it has a synonym."""
    words = description.replace(",", " ,").split()
    out: list[str] = []
    swapped = 0
    for word in words:
        lower = word.lower()
        if lower in _ARTICLES:
            continue
        if lower in SYNONYMS:
            out.append(SYNONYMS[lower])
            swapped += 1
        else:
            out.append(word)
    if not swapped:
        return None
    body = " ".join(out).replace(" ,", ",")
    template = TEMPLATES[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(TEMPLATES)]
    return template.format(body)


def sentence(description_section: str, description: str) -> str | None:
    for piece in _SENTENCE_END.split(description_section):
        words = piece.split()
        if 8 <= len(words) <= 30 and piece.strip() != description:
            return piece.strip()
    return None


def build(pages: Iterable[dict[str, str]]) -> list[Query]:
    """Every query of every kind for ``pages``; sentences found in two pages are dropped."""
    pages = list(pages)
    flat = [" ".join(p["text"].split()) for p in pages]
    queries: list[Query] = []
    for page in pages:
        name, description = page["name"], page["description"]
        queries.append(Query("description", description, name))
        found = sentence(page["description_section"], description)
        if found is not None and sum(found in text for text in flat) == 1:
            queries.append(Query("sentence", found, name))
        other = paraphrase(name, description)
        if other is not None:
            queries.append(Query("paraphrase", other, name))
    return queries
