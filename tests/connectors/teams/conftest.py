"""Fixtures for the teams connector tests (see teams_support.py)."""

from teams_support import graph

__all__ = ["graph"]
