"""A fake Meilisearch server written from Meilisearch's API documentation (test code only).

See ``server.py`` (routes, tasks, auth, faults) and ``_index.py`` (documents, settings,
search) for each behaviour and the documentation page it follows.
"""

from __future__ import annotations

from fakes.meilisearch.server import FakeMeilisearch

__all__ = ["FakeMeilisearch"]
