"""The content pipeline: parse raw bytes to normalized text, chunk it, embed chunks."""
