"""manifest."""
