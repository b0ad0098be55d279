"""Typed reports read like the JSON they print.

Every typed result of the workspace (status, document, search, prune, reconcile, ...)
is a frozen dataclass whose ``as_dict()`` is exactly the JSON its command prints. This
mixin also lets callers read a report by its JSON key (``report["indexes"]``), as they
did when the workspace returned plain dicts.
"""

from __future__ import annotations

from typing import Any


class JsonView:
    """Mixin: ``report[key]`` reads ``report.as_dict()[key]``."""

    def as_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.as_dict().get(key, default)
