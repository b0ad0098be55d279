"""Scale-out: wall time of web syncs and of indexing with 1, 2 and 4 Celery workers.

Each row is a fresh PostgreSQL manifest (127.0.0.1:5432) and fresh Redis queues, with
``W`` ``headwater worker --pool solo`` processes started (and answering a ping) before
the clock starts. Measured, each from enqueue to the last task's result:

- ``web, 1 source``: one web source of ``--pages`` pages behind a local HTTP server that
  sleeps 50 ms per response (``--delay-ms``); ``headwater sync --no-index``.
- ``web, 4 sources``: the same pages split over 4 web sources (one sync task each).
- ``index``: ``--docs`` filesystem documents already in the manifest (synced here, not
  timed), indexed with the fake embedder by ``headwater index`` (claimed batches).

- ``sync + index, content in a shared folder / in S3``: ``--docs`` filesystem documents
  synced and indexed (``headwater sync``: sync tasks, then index tasks) by 2 workers,
  once with the content store in the shared ``state_dir`` (the default) and once in
  S3-compatible storage (``[content] url = "s3://…"``, moto's server on 127.0.0.1, in
  this process); nothing else differs, so the gap is what the object store costs.

One web source is one sync task under one lease, so a single source never spreads over
workers; its parallelism is the connector's own fetch pool (``concurrency``). Prints a
Markdown table; ``docs/performance.md`` ("Scale-out") quotes a run.

    .venv/bin/python bench/scaleout.py --pages 1000 --docs 2000
    .venv/bin/python bench/scaleout.py --docs 2000 --workloads content,moto --workers 2
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pgdb import database

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "src"))

from headwater import Workspace  # noqa: E402
from headwater.executor.dispatch import app_for  # noqa: E402

REDIS = "redis://127.0.0.1:6379/9"
PUBLIC = "{ public = true }"


def serve(pages: int, sections: int, delay_s: float) -> ThreadingHTTPServer:
    """``/s{k}/`` links to its share of ``/s{k}/p{i}``; every response sleeps ``delay_s``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(delay_s)
            parts = self.path.strip("/").split("/")
            if not parts[0].startswith("s"):  # robots.txt and anything else: none here
                self.send_error(404)
                return
            if len(parts) == 1:
                k = int(parts[0][1:])
                links = "".join(
                    f"<a href=/s{k}/p{i}>p{i}</a>" for i in range(pages) if i % sections == k
                )
                body = f"<html><body><main>{links}</main></body></html>"
            else:
                i = parts[1][1:]
                body = (
                    f"<html><head><title>Page {i}</title></head><body><main>"
                    f"<p>benchword{i} is on page {i} of the bench.</p></main></body></html>"
                )
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def write_config(tmp: Path, manifest: str, sources: str, prefix: str) -> Path:
    config = tmp / "headwater.toml"
    config.write_text(
        f'[workspace]\ntenant = "bench"\nstate_dir = "{tmp / "state"}"\n'
        f'[manifest]\nurl = "{manifest}"\n'
        f'[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[embedder]\ntype = "fake"\ndimension = 32\n'
        f'[executor]\ntype = "celery"\nbroker_url = "{REDIS}"\nindex_tasks = 4\n'
        f'queues = {{ sync = "{prefix}.sync", index = "{prefix}.index" }}\n'
        f"[sync]\nindex_batch_size = 50\n\n{sources}",
        encoding="utf-8",
    )
    return config


@contextmanager
def workers(config: Path, count: int, tmp: Path) -> Iterator[None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = []
    for i in range(count):
        log = open(tmp / f"worker{i}.log", "wb")  # noqa: SIM115
        argv = [sys.executable, "-m", "headwater", "-c", str(config), "worker", "--pool",
                "solo", "--queues", "sync,index", "--hostname", f"b{i}-{uuid.uuid4().hex[:6]}@%h",
                "--loglevel", "WARNING"]  # fmt: skip
        procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        with Workspace.open(config) as ws:
            app = app_for(ws.runtime)
            deadline = time.monotonic() + 120
            while len(app.control.ping(timeout=1.0) or []) < count:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{count} workers did not answer; see {tmp}/worker*.log")
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def web_sources(url: str, sections: int) -> str:
    return "".join(
        f'[[source]]\nid = "site{k}"\ntype = "web"\nstart_urls = ["{url}/s{k}/"]\n'
        f"requests_per_second = 1000\nbatch_size = 50\naccess = {PUBLIC}\n\n"
        for k in range(sections)
    )


def file_source(tmp: Path, docs: int) -> str:
    corpus = tmp / "corpus"
    corpus.mkdir()
    for i in range(docs):
        words = " ".join(f"w{(i * 7 + j) % 997}" for j in range(300))
        (corpus / f"doc{i:05d}.md").write_text(f"# Doc {i}\n\n{words}\n", encoding="utf-8")
    return f'[[source]]\nid = "files"\ntype = "filesystem"\nroot = "{corpus}"\naccess = {PUBLIC}\n'


def timed(
    count: int, sources: Callable[[Path], str], work: Callable[[Workspace], int],
    prepare: Callable[[Workspace], None] | None = None,
) -> tuple[float, int]:  # fmt: skip
    with tempfile.TemporaryDirectory() as d, database("hw_scaleout") as manifest:
        tmp = Path(d)
        config = write_config(tmp, manifest, sources(tmp), uuid.uuid4().hex[:10])
        if prepare is not None:
            with Workspace.open(config) as ws:
                prepare(ws)
        with workers(config, count, tmp), Workspace.open(config) as ws:
            started = time.monotonic()
            done = work(ws)
            return time.monotonic() - started, done


def web_sync(ws: Workspace) -> int:
    result = ws.sync(index=False)
    bad = [r for r in result.runs if r.status != "succeeded"]
    if bad:
        raise RuntimeError(f"web runs did not succeed: {[(r.source, r.error) for r in bad]}")
    return sum(r.counts.new for r in result.runs)


@contextmanager
def moto_bucket() -> Iterator[str]:
    """A bucket on moto's S3 server (127.0.0.1, a thread here); its ``[content]`` table."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint, name = f"http://{host}:{port}", f"hw-bench-{uuid.uuid4().hex[:8]}"
    keys = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys)
    s3.create_bucket(Bucket=name)
    try:
        yield (
            f'[content]\nurl = "s3://{name}/hw"\nendpoint_url = "{endpoint}"\n'
            'region = "us-east-1"\naccess_key_id = "test"\nsecret_access_key = "test"\n'
        )
    finally:
        server.stop()


def moto_rate(requests: int = 900) -> float:
    """Requests/s of moto's server alone here: HEAD, PUT, GET of 2 kB objects, the three
    calls the content store makes per document (HEAD+PUT in a sync, GET in indexing)."""
    import boto3

    with moto_bucket() as content:
        endpoint = content.split('endpoint_url = "')[1].split('"')[0]
        bucket = content.split('"s3://')[1].split("/")[0]
        keys = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys)
        started = time.monotonic()
        for i in range(requests // 3):
            with suppress(s3.exceptions.ClientError):
                s3.head_object(Bucket=bucket, Key=f"k/{i}")
            s3.put_object(Bucket=bucket, Key=f"k/{i}", Body=os.urandom(2000))
            s3.get_object(Bucket=bucket, Key=f"k/{i}")["Body"].read()
        return requests / (time.monotonic() - started)


def full_sync(docs: int) -> Callable[[Workspace], int]:
    """``headwater sync`` through the workers; the documents indexed (all, or an error)."""

    def work(ws: Workspace) -> int:
        result = ws.sync()
        if [r.status for r in result.runs] != ["succeeded"] or result.index.replaced != docs:
            raise RuntimeError(f"not every document was synced and indexed: {result.as_dict()}")
        return result.index.replaced

    return work


def content_rows(docs: int, counts: list[int]) -> list[tuple[str, int, float, int]]:
    """Sync + index of ``docs`` documents, content in the shared folder, then in S3."""
    rows = []
    for count in counts:
        s, n = timed(count, lambda t: file_source(t, docs), full_sync(docs))
        rows.append((f"sync + index, {docs} docs, content in the shared folder", count, s, n))
        print(rows[-1], file=sys.stderr, flush=True)
        with moto_bucket() as content:
            s, n = timed(count, lambda t: file_source(t, docs) + content, full_sync(docs))
        rows.append((f"sync + index, {docs} docs, content in S3 (moto)", count, s, n))
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--workloads", default="web,index,content")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    workloads = set(args.workloads.split(","))
    rows: list[tuple[str, int, float, int]] = []
    for sections in (1, 4) if "web" in workloads else ():
        server = serve(args.pages, sections, args.delay_ms / 1000)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        for count in counts:
            s, n = timed(count, lambda _t, u=url, k=sections: web_sources(u, k), web_sync)  # type: ignore[misc]
            rows.append((f"web, {args.pages} pages, {sections} source(s)", count, s, n))
            print(rows[-1], file=sys.stderr, flush=True)
        server.shutdown()
    for count in counts if "index" in workloads else ():
        s, n = timed(
            count,
            lambda t: file_source(t, args.docs),
            lambda ws: ws.index().replaced,
            prepare=lambda ws: ws.sync(index=False, executor="local") and None,
        )
        rows.append((f"index, {args.docs} docs, fake embedder", count, s, n))
        print(rows[-1], file=sys.stderr, flush=True)
    if "content" in workloads:
        rows += content_rows(args.docs, counts)
    if "moto" in workloads:
        print(f"moto alone: {moto_rate():.0f} requests/s (HEAD, PUT, GET)", flush=True)
    print(f"load average at the end: {os.getloadavg()}")
    print("| workload | workers | wall s | documents | per s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, count, s, n in rows:
        print(f"| {name} | {count} | {s:.1f} | {n} | {n / s:.0f} |")


if __name__ == "__main__":
    main()
