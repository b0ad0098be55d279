"""Ingestion hooks: code run on each normalized document before it is chunked.

A hook is named by ``[[hooks]] name = "…"`` and found in the ``headwater.hooks`` entry
point group (built-in hooks, such as ``redact``, also without their entry point). The
entry point names a factory called with the entry's other keys as keyword options; it
returns a ``Hook``: an object with a ``version`` string, called with a ``HookDocument``
and returning a new one (sections edited, dropped or added; title or metadata changed)
or ``Drop(reason)``. Hooks run in their configured order. Each hook's name, version and
options enter the version that re-chunks stored content (``HookChain.describe``), so
changing a hook re-processes every document from the content store and never reads a
source. An exception a hook raises fails that document only (``hook_error``). A source
may run its own chain (``[[source.hooks]]``, after the workspace's unless it sets
``workspace_hooks = false``): ``HookSet`` holds the workspace's chain and each such
source's, and describes them all for the version.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.errors import ConfigError, ItemError
from headwater.pipeline.hooks._contract import (
    Drop,
    Hook,
    HookDocument,
    join_sections,
    split_sections,
)
from headwater.pipeline.hooks.redact import Redact
from headwater.plugins import entry_points, load_plugin

__all__ = [
    "Drop",
    "Hook",
    "HookChain",
    "HookDocument",
    "HookSet",
    "join_sections",
    "load_hooks",
    "split_sections",
]

GROUP = "headwater.hooks"
BUILTIN_HOOKS: dict[str, Callable[..., Hook]] = {"redact": Redact}
"""Hooks found even when their entry point is not installed (a source checkout)."""


@dataclass(frozen=True)
class HookChain:
    """The configured hooks in order: ``(name, options, hook)`` each."""

    hooks: tuple[tuple[str, Mapping[str, Any], Hook], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.hooks)

    def describe(self) -> list[list[Any]]:
        """``[name, version, options]`` per hook: part of the re-chunking version."""
        return [[name, str(hook.version), dict(options)] for name, options, hook in self.hooks]

    def run(self, document: HookDocument) -> HookDocument | Drop:
        """Every hook in order; ``Drop`` stops at once (its reason names the hook).

        Raises a permanent ``ItemError`` (``hook_error``) when a hook raises or returns
        something else.
        """
        for name, _, hook in self.hooks:
            try:
                result = hook(document)
            except Exception as exc:  # a hook's own bug or refusal: this document only
                raise ItemError(
                    "hook_error",
                    f"hook {name!r} raised {type(exc).__name__}: {exc}; the document keeps its "
                    "last indexed version. Fix the hook (a new version re-processes every "
                    "document), or remove it from [[hooks]].",
                ) from exc
            if isinstance(result, Drop):
                return Drop(f"hook {name!r}: {result.reason}")
            if not isinstance(result, HookDocument):
                raise ItemError(
                    "hook_error",
                    f"hook {name!r} returned {type(result).__name__}; expected a HookDocument "
                    "or Drop. Fix the hook.",
                )
            document = result
        return document


@dataclass(frozen=True)
class HookSet:
    """The hooks of a workspace: its ``[[hooks]]`` chain, and the chain of each source
    that has its own (``[[source.hooks]]``); called with a source id, the chain to run."""

    workspace: HookChain = field(default_factory=HookChain)
    sources: Mapping[str, HookChain] = field(default_factory=dict)

    def __call__(self, source_id: str) -> HookChain:
        return self.sources.get(source_id, self.workspace)

    def __bool__(self) -> bool:
        return bool(self.workspace) or any(self.sources.values())

    def describe(self) -> list[Any] | dict[str, Any]:
        """Every chain as plain data, for the re-chunking version: the workspace chain's
        ``describe()`` alone while no source has its own (versions stay as they were)."""
        if not self.sources:
            return self.workspace.describe()
        return {
            "workspace": self.workspace.describe(),
            "sources": {sid: self.sources[sid].describe() for sid in sorted(self.sources)},
        }


def load_hooks(
    entries: Sequence[tuple[str, Mapping[str, Any]]], where: str = "[[hooks]]"
) -> HookChain:
    """The chain of ``[[hooks]]`` entries (name, options); ``ConfigError`` names an unknown
    hook or options it refuses, at ``where`` (``[[source.hooks]] of source 'docs'``)."""
    built: list[tuple[str, Mapping[str, Any], Hook]] = []
    for position, (name, options) in enumerate(entries, start=1):
        factory = load_plugin(GROUP, name) or BUILTIN_HOOKS.get(name)
        if factory is None or not callable(factory):
            known = sorted({ep.name for ep in entry_points(group=GROUP)} | set(BUILTIN_HOOKS))
            raise ConfigError(
                f"{where} #{position}: no hook named {name!r}; expected one of "
                f"{', '.join(known)}. Install the package that provides it (entry point group "
                f"{GROUP!r}) or fix `name`."
            )
        try:
            hook: Hook = factory(**options)
        except (TypeError, ValueError, re.error) as exc:
            raise ConfigError(
                f"{where} #{position} ({name!r}): its options {dict(options)} were refused: "
                f"{exc}. Fix the options (docs/hooks.md)."
            ) from exc
        if not isinstance(getattr(hook, "version", None), str) or not callable(hook):
            raise ConfigError(
                f"{where} #{position} ({name!r}) built {type(hook).__name__}, which has no "
                "`version` string or is not callable; expected a Hook (docs/hooks.md)."
            )
        built.append((name, dict(options), hook))
    return HookChain(tuple(built))
