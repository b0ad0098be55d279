"""The base of every response body: a pydantic model that never drops a key.

``extra="allow"`` keeps any key a report gains before its model does, so a body never
loses a key to its schema (tests/api/test_api_models.py holds every tested body to
having none undeclared). Every model in ``headwater.api.models`` derives from ``Body``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    """A JSON response body (or a part of one)."""

    model_config = ConfigDict(extra="allow")
