"""Fixtures for the jira connector tests (see jira_support.py)."""

from jira_support import site

__all__ = ["site"]
