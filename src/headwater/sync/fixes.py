"""What fixes or silences a group of failures: one config line or command per cause.

A pure function of the group (source, stage, class, extension, a sample message) and
the few facts of its source that decide the answer (its type, whether it takes
``exclude`` globs, its size settings): ``unsupported_type .conf`` is fixed by
``[parse] text_extensions = [".conf"]``, a ``.gif`` that holds no text is silenced by an
``exclude`` glob, ``too_large`` names the size setting to raise, ``encrypted``
(password-protected) is silenced by an ``exclude`` glob, ``invalid_principal`` is fixed
at the source, and a class without a known fix points at its records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from headwater.jsonview import JsonView
from headwater.manifest.failure_groups import COMPRESSION_SUFFIXES, FailureGroup

# Size settings a connector's options may have, in the order a source is asked.
SIZE_SETTINGS = (
    "max_file_bytes",
    "max_object_bytes",
    "max_message_bytes",
    "max_page_bytes",
    "max_bytes",
)
# Extensions of files that hold no text Headwater reads: excluding them is the fix.
NO_TEXT_EXTENSIONS = frozenset(
    {
        ".gif", ".png", ".jpg", ".jpeg", ".bmp", ".ico", ".icns", ".tif", ".tiff", ".webp",
        ".heic", ".psd", ".xcf", ".mp3", ".wav", ".flac", ".ogg", ".oga", ".m4a", ".aac",
        ".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".wmv", ".ttf", ".otf", ".woff",
        ".woff2", ".eot", ".pfb", ".afm", ".exe", ".dll", ".so", ".dylib", ".o", ".a",
        ".lib", ".obj", ".bin", ".class", ".jar", ".war", ".pyc", ".pyo", ".wasm", ".7z",
        ".rar", ".iso", ".dmg", ".deb", ".rpm", ".apk", ".whl", ".egg", ".cab", ".msi",
        ".db", ".sqlite", ".sqlite3", ".mdb", ".accdb", ".dbf", ".mo", ".gmo", ".pickle",
        ".pkl", ".npy", ".npz", ".gpg", ".sig", ".asc", ".p12", ".pfx", ".der", ".keystore",
    }
)  # fmt: skip


@dataclass(frozen=True)
class SourceFacts:
    """What a fix depends on of a group's source: ``type`` None when not configured,
    ``excludable`` when its connector takes ``exclude`` globs, ``limits`` its size
    settings with their values, and the chunker's ``max_document_chars``."""

    type: str | None
    excludable: bool = False
    limits: Mapping[str, int] = field(default_factory=dict)
    document_chars: int = 5_000_000


@dataclass(frozen=True, eq=False)
class Fix(JsonView):
    """``line`` to write (or command to run) ``where``; ``detail`` says what it does."""

    kind: str
    line: str
    where: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        """The fix as a JSON-ready dict."""
        return {"kind": self.kind, "line": self.line, "where": self.where, "detail": self.detail}


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def _source_table(source_id: str) -> str:
    return f'[[source]] id = "{source_id}"'


def _globs(group: FailureGroup) -> list[str]:
    """Exclude globs for the group's files: by extension, or the examples' names."""
    if group.key.extension:
        return [f"**/*{s}" for s in (group.spellings or (group.key.extension,))]
    names = {e.rstrip("/").rsplit("/", 1)[-1] for e in group.examples}
    return [f"**/{n}" for n in sorted(names) if n]


def _exclude(group: FailureGroup, facts: SourceFacts, why: str) -> Fix:
    source = group.key.source_id
    if not facts.excludable:
        return Fix(
            "inspect",
            f"headwater failures --source {source}",
            "the source system",
            f"{why}; a {facts.type} source takes no exclude globs, so stop sending these "
            "objects at the source, or drop the group.",
        )
    globs = _globs(group)
    also = "" if group.key.extension else " (the examples' names; list the others alike)"
    return Fix(
        "exclude",
        f"exclude = {_toml_list(globs)}",
        _source_table(source),
        f"{why}; excluding them skips them quietly{also}. Add the globs to the "
        "source's exclude list, if it has one.",
    )


def _unsupported(group: FailureGroup, facts: SourceFacts) -> Fix:
    ext = group.key.extension or ""
    inner = ext
    for suffix in COMPRESSION_SUFFIXES:
        if ext.endswith(suffix) and ext != suffix:
            inner = ext[: -len(suffix)]
    binary = "is binary" in group.message
    if not inner or inner in NO_TEXT_EXTENSIONS or binary or inner in COMPRESSION_SUFFIXES:
        what = f"{ext} files" if ext else "these files"
        return _exclude(group, facts, f"{what} hold no text Headwater reads")
    silence = _exclude(group, facts, "")
    alternative = (
        f"; to skip them quietly instead: {silence.line} in {silence.where}"
        if silence.kind == "exclude"
        else ""
    )
    return Fix(
        "text_extensions",
        f"[parse] text_extensions = {_toml_list([inner])}",
        "headwater.toml",
        f"reads {inner} files as plain text from the next sync on (one source alone: "
        f"parse = {{ text_extensions = {_toml_list([inner])} }} in its table){alternative}.",
    )


def _too_large(group: FailureGroup, facts: SourceFacts) -> Fix:
    source = group.key.source_id
    if group.key.stage == "chunk":
        return Fix(
            "limit",
            f"[chunker] max_document_chars = {facts.document_chars * 2}",
            "headwater.toml",
            f"the documents' text is longer than max_document_chars "
            f"({facts.document_chars:,}); raise it above the longest (each message gives "
            "the length), or exclude the files.",
        )
    if group.key.stage == "parse":
        return _exclude(
            group,
            facts,
            "these files unpack or spread past a fixed safety limit (archive size, "
            "entries, rows, parse time), which no setting raises",
        )
    setting = next((s for s in SIZE_SETTINGS if s in facts.limits), None)
    if setting is None:
        named = re.search(r"\bmax_[a-z_]+", group.message)
        if named is None:
            return _inspect(group)
        return Fix(
            "limit",
            f"{named.group(0)} = <larger>",
            _source_table(source),
            f"the objects are larger than {named.group(0)}; raise it above the largest "
            "(each message gives the size), or exclude them.",
        )
    current = facts.limits[setting]
    return Fix(
        "limit",
        f"{setting} = {current * 2}",
        _source_table(source),
        f"the objects are larger than {setting} ({current:,} bytes now); raise it above "
        f"the largest (each message gives the size: `headwater failures --source "
        f"{source}`), or exclude them.",
    )


def _inspect(group: FailureGroup) -> Fix:
    source = group.key.source_id
    return Fix(
        "inspect",
        f"headwater failures --source {source}",
        "a shell",
        f"no known fix for {group.key.error_class} at stage {group.key.stage}; each "
        "record's message says what went wrong and what to do.",
    )


def fix_for(group: FailureGroup, facts: SourceFacts) -> Fix:
    """The line that fixes or silences ``group``'s failures, with where it goes."""
    key = group.key
    if facts.type is None:
        return Fix(
            "remove_source",
            f"headwater source remove {key.source_id}",
            "a shell",
            "the source is no longer configured; removing it deletes its documents "
            "from the indexes and forgets these records.",
        )
    if key.error_class == "unsupported_type":
        return _unsupported(group, facts)
    if key.error_class == "too_large":
        return _too_large(group, facts)
    if key.error_class == "invalid_principal":
        return Fix(
            "source_acl",
            "fix the ACL at the source",
            "the source system",
            "each document's ACL names an identity that could pass as another (the "
            "messages say which); nobody sees it until the source's ACL changes, and the "
            "next sync reads the ACL again.",
        )
    if key.error_class == "encrypted":
        return _exclude(
            group,
            facts,
            "these files are password-protected and cannot be read without the password "
            "(remove the password at the source to index them)",
        )
    if key.error_class == "empty_document":
        return _exclude(
            group,
            facts,
            "these files have no text after parsing (empty, or a scan without a text "
            "layer); each is read again when it changes",
        )
    if key.error_class == "transient":
        return Fix(
            "retry",
            f"headwater sync {key.source_id}",
            "a shell",
            "a temporary error (network, server, lock); the next sync tries again, and "
            "dead-lettered ones are tried again when redriven.",
        )
    if key.stage == "parse" and key.extension:
        return _exclude(
            group,
            facts,
            f"these {key.extension} files are damaged, protected or not what their "
            "extension says (fix them at the source)",
        )
    return _inspect(group)


@dataclass(frozen=True, eq=False)
class CauseReport(JsonView):
    """One group of open failures with the fix for it."""

    group: FailureGroup
    fix: Fix

    def as_dict(self) -> dict[str, object]:
        """The group and its fix as a JSON-ready dict."""
        g, k = self.group, self.group.key
        return {
            "source": k.source_id,
            "stage": k.stage,
            "error_class": k.error_class,
            "extension": k.extension,
            "label": k.label(),
            "count": g.count,
            "dead": g.dead,
            "retrying": g.count - g.dead,
            "examples": list(g.examples),
            "fix": self.fix.as_dict(),
        }


@dataclass(frozen=True, eq=False)
class FailureSummary(JsonView):
    """``headwater failures --summary``: the groups, largest first, and their total."""

    groups: tuple[CauseReport, ...]

    @property
    def total(self) -> int:
        """The number of open failures across all groups."""
        return sum(c.group.count for c in self.groups)

    def as_dict(self) -> dict[str, object]:
        """The summary as a JSON-ready dict."""
        return {"total": self.total, "groups": [c.as_dict() for c in self.groups]}


def summary_of(
    groups: Sequence[FailureGroup], facts_of: Callable[[str], SourceFacts]
) -> FailureSummary:
    """Each group with its fix; ``facts_of`` is asked once per source."""
    facts: dict[str, SourceFacts] = {}
    reports = []
    for group in groups:
        source = group.key.source_id
        if source not in facts:
            facts[source] = facts_of(source)
        reports.append(CauseReport(group, fix_for(group, facts[source])))
    return FailureSummary(tuple(reports))
