"""Fixtures for the gmail connector tests (see gmail_support.py)."""

from gmail_support import gm

__all__ = ["gm"]
