"""Helpers for the s3 connector tests: a free port, the request-logging server handle and
a connector factory pointed at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from pydantic import SecretStr

from headwater.connectors.base import SourceContext
from headwater.connectors.s3 import S3Connector, S3Options


@dataclass
class S3Server:
    endpoint: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    # When set, a listing's follow-up pages (continuation-token) of this bucket are refused
    # with 403 AccessDenied: a listing that breaks part way.
    refuse_next_pages_of: str | None = None

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )

    def count(self, method: str, *, query: str | None = None) -> int:
        return sum(
            1 for m, path in self.requests if m == method and (query is None or query in path)
        )


def make_connector(endpoint: str, bucket: str, state_dir: Path, **options: Any) -> S3Connector:
    opts = S3Options(
        bucket=bucket,
        endpoint_url=endpoint,
        region="us-east-1",
        access_key_id=SecretStr("test"),
        secret_access_key=SecretStr("test"),
        **options,
    )
    return S3Connector(opts, SourceContext(source_id="s3-test", state_dir=state_dir))
