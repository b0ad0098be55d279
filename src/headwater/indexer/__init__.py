"""The indexer: drains pending manifest work into every sink."""
