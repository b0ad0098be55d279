"""Fixtures for the zendesk connector tests (see zendesk_support.py)."""

from zendesk_support import zd

__all__ = ["zd"]
