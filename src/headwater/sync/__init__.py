"""The sync runner: windows, batches, version gates, checkpoints, prunes."""
