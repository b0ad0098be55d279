"""Fixtures for the gitlab connector tests (see gitlab_support.py)."""

from gitlab_support import gl

__all__ = ["gl"]
