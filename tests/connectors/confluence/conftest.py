"""Fixtures for the confluence connector tests (see confluence_support.py)."""

from confluence_support import site

__all__ = ["site"]
