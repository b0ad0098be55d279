"""Fixtures for the servicenow connector tests (see servicenow_support.py)."""

from servicenow_support import sn

__all__ = ["sn"]
