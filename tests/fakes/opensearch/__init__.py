"""A fake OpenSearch cluster written from OpenSearch's documentation (test code only).

See ``server.py`` (routes, bulk, aliases, auth, faults), ``_index.py`` (mappings, near
real time, search) and ``_query.py`` (the query DSL subset) for each behaviour and the
documentation page it follows.
"""

from __future__ import annotations

from fakes.opensearch.server import FakeOpensearch

__all__ = ["FakeOpensearch"]
