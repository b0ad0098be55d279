"""Headwater keeps a private corpus and its search indexes in sync."""
