"""The shipped connector conformance suite, for the sql connector on both servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from sql_support import Database, docs_options, make_connector

from headwater.connectors.base import ConnectorCapabilities
from headwater.connectors.sql import SqlConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestSqlTableConformance(
    ConnectorConformance,
    connector=SqlConnector,
    capabilities=ConnectorCapabilities(windowed=True, full_listing=False),
):
    """A table with an updated_at column: windowed, keyset pages of two rows."""

    @pytest.fixture
    def harness(
        self, db: Database, docs: str, failing_function: str, tmp_path: Path
    ) -> ConnectorHarness:
        refused = db.url.replace(":5432/", ":1/").replace(":3306/", ":1/")
        breaking = {  # the same rows through a function that raises at row 3
            **docs_options(docs, page_size=2, window_overlap="0s"),
            "table": None,
            "query": f"SELECT * FROM {docs} WHERE {failing_function}(id) = id",
        }
        return ConnectorHarness(
            make_failing_listing=lambda: make_connector(db.url, tmp_path, **breaking),
            # The suite checks the exact window; window_overlap widens it on purpose.
            make=lambda: make_connector(
                db.url, tmp_path, **docs_options(docs, page_size=2, window_overlap="0s")
            ),
            make_broken=lambda: make_connector(refused, tmp_path, **docs_options(docs)),
        )


class TestSqlQueryConformance(
    ConnectorConformance,
    connector=SqlConnector,
    capabilities=ConnectorCapabilities(windowed=False, full_listing=True),
):
    """A query with two id columns and a template: not windowed, a full listing."""

    @pytest.fixture
    def harness(
        self, db: Database, docs: str, failing_function: str, tmp_path: Path
    ) -> ConnectorHarness:
        options = {
            "query": f"SELECT category, id, title, body FROM {docs}",
            "id_columns": ["category", "id"],
            "content_template": "# {title}\n\n{body}\n",
            "media_type": "text/markdown",
            "page_size": 3,
        }
        return ConnectorHarness(
            make=lambda: make_connector(db.url, tmp_path, **options),
            make_broken=lambda: make_connector(
                db.url, tmp_path, **{**options, "query": "SELECT * FROM hw_no_such_table"}
            ),
            make_failing_listing=lambda: make_connector(
                db.url,
                tmp_path,
                **{**options, "query": f"{options['query']} WHERE {failing_function}(id) = id"},
            ),
        )
