"""The ``azure_blob`` connector: the blobs of one Azure Storage container, REST API.

Object ids are blob names, version hints are ETags, content is fetched lazily, and
deletes are found by ``enumerate()`` (a full listing). See docs/connectors/azure_blob.md.
"""

from headwater.connectors.azure_blob._connector import AzureBlobConnector, AzureBlobOptions

__all__ = ["AzureBlobConnector", "AzureBlobOptions"]
