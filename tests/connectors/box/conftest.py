"""Fixtures for the box connector tests (see box_support.py)."""

from box_support import box

__all__ = ["box"]
