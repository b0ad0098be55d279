"""Typed reports read like the JSON they print.

Every typed result of the workspace (status, document, search, prune, reconcile, ...)
is a frozen dataclass whose ``as_dict()`` is exactly the JSON its command prints. This
mixin also lets callers read a report by its JSON key (``report["indexes"]``) and
compare it with a dict of its JSON, as they did when the workspace returned plain dicts
(the dataclasses are declared ``eq=False`` so this ``__eq__`` applies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class JsonView:
    """Mixin: ``report[key]`` reads ``report.as_dict()[key]``; equal to its JSON dict."""

    __hash__ = None  # type: ignore[assignment]  # equal to dicts, so never hashable

    def as_dict(self) -> dict[str, Any]:
        """The report as the JSON its command prints (each report defines it)."""
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``as_dict()[key]``, or ``default`` when the key is absent."""
        return self.as_dict().get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonView):
            return type(other) is type(self) and other.as_dict() == self.as_dict()
        if isinstance(other, Mapping):
            return self.as_dict() == dict(other)
        return NotImplemented
