"""Pieces of the workspace kept out of workspace.py: embedder wiring, reports."""
