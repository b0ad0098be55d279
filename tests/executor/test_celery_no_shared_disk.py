"""Two ``headwater worker`` processes as on two hosts: nothing shared on disk.

Each worker has its own config directory and ``state_dir``; what they share is what a
scaled-out deployment shares over the network: the PostgreSQL manifest, the broker, the
content store in S3-compatible storage (moto's server) and a ``pgvector`` index (the
real PostgreSQL + pgvector of ``pg_embedded``). One worker takes only sync tasks (it
reads the source and stores content), the other only index tasks (it reads that
content back from the bucket), so every document crosses "hosts" through the bucket;
the counts come out exact (issue 25 item 4).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from deployment import BROKERS, ROOT
from moto.server import ThreadedMotoServer

from headwater import Workspace
from headwater.sinks.pgvector import PgvectorSink
from pg_embedded import fresh_schema, pgvector_database  # noqa: F401 - fixtures
from ports import free_port
from workspace_helpers import filesystem_source, write_config

DOCS = 9


@pytest.fixture
def bucket() -> Iterator[tuple[str, str]]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    name = f"hw-{uuid.uuid4().hex[:10]}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    ).create_bucket(Bucket=name)
    yield endpoint, name
    server.stop()


def test_a_sync_worker_and_an_index_worker_share_no_disk(
    tmp_path: Path,
    pg_database: str,
    pgvector_database: str,  # noqa: F811
    fresh_schema: str,  # noqa: F811
    bucket: tuple[str, str],
) -> None:
    endpoint, name = bucket
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(DOCS):
        (corpus / f"note{i}.md").write_text(f"# Note {i}\n\nsharedword{i} lives in note {i}.\n")
    prefix = uuid.uuid4().hex[:10]
    shared = (
        f'[executor]\ntype = "celery"\nbroker_url = "{BROKERS["redis"]}"\n'
        f'queues = {{ sync = "{prefix}.sync", index = "{prefix}.index" }}\n'
        f'[content]\nurl = "s3://{name}/hw"\nendpoint_url = "{endpoint}"\n'
        'region = "us-east-1"\naccess_key_id = "test"\nsecret_access_key = "test"\n'
    )
    index = (
        f'[[index]]\nname = "main"\ntype = "pgvector"\nurl = "{pgvector_database}"\n'
        f'schema = "{fresh_schema}"\n'
    )
    configs = {}
    for host in ("client", "host-a", "host-b"):
        (tmp_path / host).mkdir()
        configs[host] = write_config(
            tmp_path / host,
            manifest_url=pg_database,
            indexes=index,
            sources=filesystem_source(corpus, access="{ public = true }"),
            extra=shared,
        )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    workers = []
    for host, queues in (("host-a", "sync"), ("host-b", "index")):
        log = (tmp_path / f"{host}.log").open("wb")
        command = [sys.executable, "-m", "headwater", "-c", str(configs[host]), "worker"]
        command += ["--pool", "solo", "--queues", queues, "--loglevel", "WARNING"]
        command += ["--hostname", f"{host}-{prefix}@%h"]
        workers.append(
            subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path / host
            )
        )
    try:
        with Workspace.open(configs["client"], sink_types={"pgvector": PgvectorSink}) as ws:
            result = ws.sync()
            logs = "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))
            assert [r.status for r in result.runs] == ["succeeded"], logs
            assert result.runs[0].counts.new == DOCS
            assert (result.index.replaced, result.index.failed) == (DOCS, 0), logs
            inventory = list(ws.sink("main").inventory())
            assert len(inventory) == DOCS
            hits = ws.search("sharedword4", mode="keyword")
            assert hits and hits[0].title == "Note 4"
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    for host in ("client", "host-a", "host-b"):
        assert not (tmp_path / host / "state" / "content").exists(), host
