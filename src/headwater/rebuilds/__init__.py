"""Generations and blue-green rebuilds, wired over the Workspace.

These modules sit beside the workspace (the composition root), above the indexer: they
build one indexer per generation pipeline from recorded settings (``pipelines``) and run
rebuilds, verification, switch, rollback and retirement (``orchestrate``). The lower
layers they drive (indexer, manifest generations, sinks) never import them.
"""
