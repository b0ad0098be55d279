"""Deployment warnings of the ``[executor]`` section: what works, but only on one host.

The embedded ``sqlite`` index is a file on one host, allowed only when every Celery
worker runs there (a warning, not an error); the dispatcher and ``headwater workers``
print it. The config errors of ``[executor]`` are checked with the rest of the config
(``headwater.config.executor_problems``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from headwater.config import HeadwaterConfig


def executor_warnings(config: HeadwaterConfig) -> list[str]:
    """What works, but only in a narrow deployment."""
    if config.executor.type != "celery":
        return []
    local = [i.name for i in config.index if i.type == "sqlite"] or (
        ["main"] if not config.index else []
    )
    return [
        f"index {name!r} is the embedded sqlite index: a file on this host, so every "
        "Celery worker must run on this one host; use a Qdrant server index to spread "
        "workers over several hosts."
        for name in local
    ]
