"""indexer."""
