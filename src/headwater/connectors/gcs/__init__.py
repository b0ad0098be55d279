"""The ``gcs`` connector: the objects of one Google Cloud Storage bucket, JSON API.

Object ids are object names, version hints are generations, content is fetched lazily,
and deletes are found by ``enumerate()`` (a full listing). See docs/connectors/gcs.md.
"""

from headwater.connectors.gcs._connector import GcsConnector, GcsOptions

__all__ = ["GcsConnector", "GcsOptions"]
