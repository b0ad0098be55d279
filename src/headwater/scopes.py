"""Folder scopes: where a document sits in its source's hierarchy, as exact tokens.

A connector with a hierarchy puts the document's path in it under the metadata key
``hierarchy`` (``HIERARCHY_KEY``): folders and the document's own name joined by ``/``
(``docs/guides/intro.md``; a Confluence page is ``SPACE/ancestor-id/…/page-id``). Every
index stores, per chunk, one *scope token* per node on that path plus one for the
source's root (``scope_tokens``): ``fs:``, ``fs:docs``, ``fs:docs/guides``,
``fs:docs/guides/intro.md``. A search scoped to ``{source, path}`` asks for chunks holding
the token ``scope_key(source, path)``: an exact match on a whole node, so ``docs/a`` never
matches ``docs/a-x`` (boundary-safe by construction, no prefix match anywhere), and the
filter runs inside each index like the ACL filter, so ``k`` results still come back.

Paths are normalized one way for documents and queries alike (``normalize_path``): slashes
at either end and empty segments dropped, ``\\`` is not a separator; ``.`` and ``..``
segments are refused in a query (a document's path is taken as the source gives it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from headwater.errors import ConfigError
from headwater.types import MetadataValue

HIERARCHY_KEY = "hierarchy"
# The most nodes one document's path contributes (deeper ones are its last ancestors).
MAX_DEPTH = 64


def normalize_path(path: str) -> str:
    """``path`` without empty segments or slashes at either end (``/a//b/`` is ``a/b``)."""
    return "/".join(part for part in path.split("/") if part)


def scope_key(source: str, path: str) -> str:
    """The token a search scoped to ``path`` in ``source`` asks for (``""``: the source)."""
    return f"{source}:{normalize_path(path)}"


def hierarchy_of(metadata: Mapping[str, MetadataValue]) -> str:
    """The document's normalized hierarchy path; ``""`` when its source has none."""
    value = metadata.get(HIERARCHY_KEY, "")
    return normalize_path(value if isinstance(value, str) else "/".join(value))


def nodes_of(path: str) -> list[str]:
    """Every node on ``path``, shallowest first: ``a/b/c`` is ``a``, ``a/b``, ``a/b/c``."""
    parts = normalize_path(path).split("/") if normalize_path(path) else []
    nodes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return nodes[-MAX_DEPTH:]


def scope_tokens(source: str, metadata: Mapping[str, MetadataValue]) -> list[str]:
    """The scope tokens of a document of ``source``: its source's root and every node on
    its hierarchy path (only the root when the source has no hierarchy)."""
    return [scope_key(source, "")] + [
        scope_key(source, n) for n in nodes_of(hierarchy_of(metadata))
    ]


@dataclass(frozen=True)
class Scope:
    """One ``--under SOURCE:PATH``: documents of ``source`` at or under ``path``."""

    source: str
    path: str = ""

    @classmethod
    def parse(cls, text: str) -> Scope:
        """``SOURCE:PATH`` (``SOURCE`` alone, or ``SOURCE:``, is the whole source)."""
        source, _, path = text.partition(":")
        return cls.of(source, path, shown=text)

    @classmethod
    def of(cls, source: str, path: str, *, shown: str | None = None) -> Scope:
        """A validated scope; ConfigError naming the value otherwise."""
        shown = shown if shown is not None else f"{source}:{path}"
        if not source.strip():
            raise ConfigError(
                f"scope {shown[:200]!r} names no source; expected SOURCE:PATH, "
                "e.g. docs:guides/setup"
            )
        parts = path.split("/")
        if any(p in (".", "..") for p in parts):
            raise ConfigError(
                f"scope {shown[:200]!r} has a '.' or '..' segment; give the folder's path "
                "from the source's root, e.g. guides/setup"
            )
        return cls(source.strip(), normalize_path(path))

    def key(self) -> str:
        """The scope token this scope matches."""
        return scope_key(self.source, self.path)

    def as_dict(self) -> dict[str, str]:
        """``{"source": …, "path": …}`` as the API takes it."""
        return {"source": self.source, "path": self.path}


def scope_keys(scopes: Sequence[Scope]) -> list[str]:
    """The distinct tokens of ``scopes``, in order."""
    return list(dict.fromkeys(s.key() for s in scopes))
