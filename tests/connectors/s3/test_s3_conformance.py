"""The shipped connector conformance suite, run for the s3 connector against moto."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from s3_support import S3Server, make_connector

from headwater.connectors.s3 import S3Connector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from ports import free_port


class TestS3Conformance(ConnectorConformance, connector=S3Connector):
    @pytest.fixture
    def harness(
        self, s3_server: S3Server, bucket: str, tmp_path: Path
    ) -> Iterator[ConnectorHarness]:
        client = s3_server.client()
        for i in range(5):
            client.put_object(Bucket=bucket, Key=f"docs/note-{i}.md", Body=f"# Note {i}\n")
        refused = f"http://127.0.0.1:{free_port()}"

        def failing() -> S3Connector:
            s3_server.refuse_next_pages_of = bucket  # the second page answers 403
            return make_connector(s3_server.endpoint, bucket, tmp_path, page_size=2)

        yield ConnectorHarness(
            make=lambda: make_connector(s3_server.endpoint, bucket, tmp_path, page_size=2),
            make_broken=lambda: make_connector(refused, bucket, tmp_path),
            make_failing_listing=failing,
        )
        s3_server.refuse_next_pages_of = None
