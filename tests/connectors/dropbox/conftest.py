"""Fixtures for the dropbox connector tests (see dropbox_support.py)."""

from dropbox_support import dbx

__all__ = ["dbx"]
