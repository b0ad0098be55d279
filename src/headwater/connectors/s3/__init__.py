"""The ``s3`` connector: any S3-compatible object store, read through boto3.

Object ids are keys, version hints are ``etag:size``, content is fetched lazily, and
deletes are found by ``enumerate()`` (a full listing). See docs/connectors/s3.md.
"""

from headwater.connectors.s3._connector import S3Connector, S3Options

__all__ = ["S3Connector", "S3Options"]
