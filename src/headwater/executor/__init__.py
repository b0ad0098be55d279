"""Executors: where sync runs and index batches execute (this process, or Celery workers)."""
