"""pipeline/embed."""
