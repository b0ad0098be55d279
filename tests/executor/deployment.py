"""A scaled-out deployment on this machine: PostgreSQL, a broker, real worker processes.

``Deployment`` writes a Celery workspace config (queue names prefixed with a fresh uuid,
so tests never share a queue) and an identical local-executor config over the same three
sources (filesystem, git over file://, web on a local HTTP server); ``start_worker``
runs ``headwater worker`` as a subprocess; ``snapshot`` reads what a comparison needs:
manifest rows and the index's inventory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from git_support import GitRepo
from httpserver import LocalHttpServer

from headwater import Workspace
from workspace_helpers import write_config

ROOT = Path(__file__).parents[2]
BROKERS = {
    "redis": "redis://127.0.0.1:6379/7",
    "amqp": "amqp://guest:guest@127.0.0.1:5672//",
}
PUBLIC = "{ public = true }"


def build_sources(tmp: Path, server: LocalHttpServer, docs: int = 12, pages: int = 8) -> str:
    corpus = tmp / "corpus"
    corpus.mkdir()
    for i in range(docs):
        (corpus / f"note{i:02d}.md").write_text(f"# Note {i}\n\nfsword{i} is in note {i}.\n")
    repo = GitRepo(tmp / "repo")
    for i in range(4):
        repo.write(f"docs/page{i}.md", f"# Git page {i}\n\ngitword{i} lives here.\n")
    repo.commit("pages")
    links = [f"/p{i}" for i in range(pages)]
    server.html(
        "/",
        f"<html><body><main>{''.join(f'<a href={h}>{h}</a>' for h in links)}</main></body></html>",
    )
    for i, link in enumerate(links):
        server.html(
            link,
            f"<html><head><title>Page {i}</title></head><body><main><p>webword{i} page {i} text.</p></main></body></html>",
            etag=f'"p{i}"',
        )
    return (
        f'[[source]]\nid = "files"\ntype = "filesystem"\nroot = "{corpus}"\nbatch_size = 4\naccess = {PUBLIC}\n\n'
        f'[[source]]\nid = "repo"\ntype = "git"\nurl = "{repo.url}"\nbranch = "main"\naccess = {PUBLIC}\n\n'
        f'[[source]]\nid = "site"\ntype = "web"\nstart_urls = ["{server.url("/")}"]\nrequests_per_second = 200\n'
        f"batch_size = 4\naccess = {PUBLIC}\n"
    )


class Deployment:
    def __init__(self, tmp: Path, manifest_url: str, broker: str, sources: str) -> None:
        self.tmp = tmp
        self.prefix = uuid.uuid4().hex[:10]
        executor = (
            f'[executor]\ntype = "celery"\nbroker_url = "{broker}"\nvisibility_timeout = 5\n'
            f"claim_seconds = 20\nmax_retries = 1\nindex_tasks = 3\n"
            f'queues = {{ sync = "{self.prefix}.sync", index = "{self.prefix}.index" }}\n'
            "[sync]\nlease_seconds = 30\nindex_batch_size = 4\n"
        )
        (tmp / "celery").mkdir()
        (tmp / "local").mkdir()
        self.config = write_config(
            tmp / "celery", manifest_url=manifest_url, sources=sources, extra=executor
        )
        self.local_config = write_config(
            tmp / "local",
            manifest_url=None,
            sources=sources,
            extra="[sync]\nlease_seconds = 30\nindex_batch_size = 4\n",
        )
        self.workers: list[subprocess.Popen[bytes]] = []

    def start_worker(
        self, queues: str = "sync,index", failpoints: str = ""
    ) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HEADWATER_FAILPOINTS": failpoints}
        name = f"w{len(self.workers)}-{self.prefix}@%h"
        log = open(self.tmp / f"worker{len(self.workers)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "headwater", "-c", str(self.config), "worker",
             "--pool", "solo", "--queues", queues, "--hostname", name, "--loglevel", "WARNING"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp,
        )  # fmt: skip
        self.workers.append(proc)
        return proc

    def wait_dead(self, proc: subprocess.Popen[bytes], timeout: float = 40) -> int:
        return proc.wait(timeout=timeout)

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.workers:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-3000:] for p in sorted(self.tmp.glob("worker*.log"))
        )


def snapshot(ws: Workspace) -> dict[str, Any]:
    """Manifest rows and index inventory, keyed by document id (ids are deterministic)."""
    docs: dict[str, Any] = {}
    after = ""
    while batch := ws.manifest.documents_after(after, 500):
        for d in batch:
            docs[d.document_id] = (d.source_id, d.object_id, d.checksum, d.revision, d.state)
        after = batch[-1].document_id
    applied = {doc: ws.manifest.index_state.for_document(doc) for doc in docs}
    inventory = {(row.document_id, row.revision, row.chunks) for row in ws.sink("main").inventory()}
    return {"documents": docs, "applied": applied, "inventory": inventory}
