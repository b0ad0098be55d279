"""Fixtures for the notion connector tests (see notion_support.py)."""

from notion_support import notion

__all__ = ["notion"]
