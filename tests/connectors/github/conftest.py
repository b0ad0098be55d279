"""Fixtures for the github connector tests (see github_support.py)."""

from github_support import gh

__all__ = ["gh"]
