"""Scale-out: wall time of web syncs and of indexing with 1, 2 and 4 Celery workers;
with ``--compare``, the NATS executor against Celery on the same two-worker run.

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

``--compare`` runs instead, for each of ``--executors`` (``celery,nats``), the web sync
of ``--pages`` pages over 4 sources on 2 workers twice: clean, and with worker 0
SIGKILLed at its first batch commit (a failpoint) and a replacement worker started
when it died. Redelivery waits are ``--redeliver-s`` on both (Redis
``visibility_timeout``, NATS ``ack_wait``). ``redeliveries`` counts, from the manifest,
the runs resumed (attempts beyond the first), and with NATS the consumer's deliveries
beyond one per message; ``run s (sum)`` adds up the runs' own durations.
"""

from __future__ import annotations

import argparse
import asyncio
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

import nats
from pgdb import database

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "src"))

from headwater import Workspace  # noqa: E402
from headwater.executor.dispatch import app_for  # noqa: E402
from headwater.executor.observe import live_workers  # noqa: E402

REDIS = "redis://127.0.0.1:6379/9"
NATS = "nats://127.0.0.1:4222"
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


def executor_table(kind: str, prefix: str, redeliver_s: int) -> str:
    """``[executor]`` for Celery on Redis or NATS, each with its own queues or stream."""
    if kind == "nats":
        return (
            f'[executor]\ntype = "nats"\nurl = "{NATS}"\nstream = "BENCH_{prefix}"\n'
            f'subject_prefix = "bench{prefix}"\nack_wait = {redeliver_s}\n'
        )
    return (
        f'[executor]\ntype = "celery"\nbroker_url = "{REDIS}"\nindex_tasks = 4\n'
        f'queues = {{ sync = "{prefix}.sync", index = "{prefix}.index" }}\n'
        f"visibility_timeout = {redeliver_s}\n"
    )


def write_config(
    tmp: Path, manifest: str, sources: str, prefix: str, kind: str = "celery",
    redeliver_s: int = 3600,
) -> Path:  # fmt: skip
    config = tmp / "headwater.toml"
    config.write_text(
        f'[workspace]\ntenant = "bench"\nstate_dir = "{tmp / "state"}"\n'
        f'[manifest]\nurl = "{manifest}"\n'
        f'[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[embedder]\ntype = "fake"\ndimension = 32\n'
        f"{executor_table(kind, prefix, redeliver_s)}"
        f"[sync]\nindex_batch_size = 50\n\n{sources}",
        encoding="utf-8",
    )
    return config


def start_worker(config: Path, tmp: Path, i: int, failpoints: str = "") -> subprocess.Popen[bytes]:
    """One ``headwater worker`` (Celery ``--pool solo``, or a one-slot NATS worker)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HEADWATER_FAILPOINTS": failpoints}
    log = open(tmp / f"worker{i}.log", "wb")  # noqa: SIM115
    argv = [sys.executable, "-m", "headwater", "-c", str(config), "worker", "--pool", "solo",
            "--queues", "sync,index", "--hostname", f"b{i}-{uuid.uuid4().hex[:6]}@%h",
            "--loglevel", "WARNING"]  # fmt: skip
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)


def ready(ws: Workspace, count: int) -> bool:
    """Whether ``count`` workers answer (Celery's ping, or NATS workers' heartbeats)."""
    if ws.config.executor.type == "nats":
        return len(live_workers(ws.runtime)) >= count
    return len(app_for(ws.runtime).control.ping(timeout=1.0) or []) >= count


@contextmanager
def workers(config: Path, count: int, tmp: Path, doomed: str = "") -> Iterator[None]:
    """``count`` workers, ready; ``doomed``: worker 0's failpoints, and a replacement
    started when it dies."""
    procs = [start_worker(config, tmp, i, doomed if i == 0 else "") for i in range(count)]
    stop = threading.Event()

    def replace() -> None:
        while procs[0].poll() is None and not stop.wait(0.1):
            pass
        if not stop.is_set():
            procs.append(start_worker(config, tmp, count))

    if doomed:
        threading.Thread(target=replace, daemon=True).start()
    try:
        with Workspace.open(config) as ws:
            deadline = time.monotonic() + 120
            while not ready(ws, count):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{count} workers did not answer; see {tmp}/worker*.log")
                time.sleep(0.5)
        yield
    finally:
        stop.set()
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


def nats_extra_deliveries(ws: Workspace) -> int:
    """NATS: the consumer's deliveries beyond one per published message (then the
    bench's stream is deleted)."""

    async def ask() -> int:
        nc = await nats.connect(NATS)
        try:
            js = nc.jetstream()
            stream = ws.config.executor.stream
            info = await js.consumer_info(stream, "workers")
            published = (await js.stream_info(stream)).state.last_seq
            await js.delete_stream(stream)
        finally:
            await nc.close()
        return int(info.delivered.consumer_seq) - int(published)

    return asyncio.run(ask())


def compare(args: argparse.Namespace) -> None:
    """The NATS executor against Celery: the same two-worker web run, clean and killed."""
    server = serve(args.pages, 4, args.delay_ms / 1000)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    print("| executor | run | wall s | documents | docs/s | run s (sum) | runs resumed "
          "| NATS redeliveries |")  # fmt: skip
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in args.executors.split(","):
        for label, doomed in (("clean", ""), ("worker 0 SIGKILLed", "after_manifest_commit")):
            with tempfile.TemporaryDirectory() as d, database("hw_scaleout") as manifest:
                tmp = Path(d)
                prefix = uuid.uuid4().hex[:10]
                config = write_config(tmp, manifest, web_sources(url, 4), prefix, kind,
                                      args.redeliver_s)  # fmt: skip
                with workers(config, 2, tmp, doomed), Workspace.open(config) as ws:
                    started = time.monotonic()
                    web_sync(ws)
                    wall = time.monotonic() - started
                    runs = ws.manifest.runs.recent(limit=1000)
                    done = sum(ws.manifest.count_documents(f"site{k}", "active") for k in range(4))
                    resumed = sum(r.attempts - 1 for r in runs)
                    extra = str(nats_extra_deliveries(ws)) if kind == "nats" else "—"
            busy = sum(r.duration_s for r in runs)
            print(f"| {kind} | {label} | {wall:.1f} | {done} | {done / wall:.1f} | {busy:.1f} "
                  f"| {resumed} | {extra} |", flush=True)  # fmt: skip
    server.shutdown()


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
    parser.add_argument("--compare", action="store_true", help="NATS against Celery")
    parser.add_argument("--executors", default="celery,nats")
    parser.add_argument("--redeliver-s", type=int, default=10)
    parser.add_argument("--workloads", default="web,index,content")
    args = parser.parse_args()
    if args.compare:
        compare(args)
        return
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
