"""The hook contract: the document a hook sees, its answers, and sections.

``HookDocument`` is a normalized document cut into sections (each starting with its
Markdown heading line); a ``Hook`` returns a new one (``evolve``) or ``Drop(reason)``.
Imported by ``headwater.pipeline.hooks`` (which re-exports it) and by every hook.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from headwater.types import MetadataValue

_HEADING = re.compile(r"#{1,6} ")
_FENCE = re.compile(r"(```|~~~)")


@dataclass(frozen=True)
class HookDocument:
    """A normalized document as hooks see it: ``sections`` are its text cut before each
    Markdown heading (outside code fences), each section starting with its heading line;
    ``"\\n\\n".join(sections)`` is the text that is chunked."""

    document_id: str
    source: str
    object_id: str
    title: str
    sections: tuple[str, ...]
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The text the sections make."""
        return join_sections(self.sections)

    def evolve(self, **changes: Any) -> HookDocument:
        """A copy with ``changes`` (``sections``, ``title``, ``metadata``)."""
        if "sections" in changes:
            changes["sections"] = tuple(changes["sections"])
        return replace(self, **changes)


@dataclass(frozen=True)
class Drop:
    """A hook's answer that the document must not be indexed, and why."""

    reason: str


class Hook(Protocol):
    """One configured hook: its version and what it does to a document."""

    version: str

    def __call__(self, document: HookDocument) -> HookDocument | Drop: ...


def split_sections(text: str) -> tuple[str, ...]:
    """``text`` cut before every heading line outside fenced code; lossless for
    normalized text (``join_sections`` gives it back)."""
    sections: list[list[str]] = [[]]
    fenced = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _HEADING.match(line) and any(s.strip() for s in sections[-1]):
            while sections[-1] and not sections[-1][-1].strip():
                sections[-1].pop()
            sections.append([])
        sections[-1].append(line)
    return tuple("\n".join(lines) for lines in sections if "".join(lines).strip())


def join_sections(sections: Sequence[str]) -> str:
    """The text of ``sections``: each stripped of blank edges, a blank line between."""
    return "\n\n".join(s.strip("\n") for s in sections if s.strip())
