"""Stopping `headwater run` while it drains a batch into the indexes (issue 28 item 1).

The embedder is an OpenAI-compatible HTTP server in this test that answers slowly, as a
loaded CPU model does: a batch of long documents took 103 s to embed, and SIGTERM waited
for all of it, saying nothing, with a second Ctrl-C ignored. Now the stop lands within
one embedding slice (well under systemd's TimeoutStopSec), is logged with what it waits
for, and a second signal aborts at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sched_helpers import HEADWATER, cli, wait_for

from workspace_helpers import filesystem_source, write_config


class SlowEmbeddings:
    """`POST /v1/embeddings` answered after ``delay`` seconds (3-dimensional vectors)."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.requests = 0
        self.released = threading.Event()  # ends every wait at teardown
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests += 1
                owner.released.wait(owner.delay)
                data = [
                    {"object": "embedding", "index": i, "embedding": [1.0, float(len(t)), 2.0]}
                    for i, t in enumerate(body["input"])
                ]
                raw = json.dumps({"object": "list", "data": data, "model": body["model"]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def embeddings() -> Iterator[SlowEmbeddings]:
    server = SlowEmbeddings()
    thread = threading.Thread(target=server.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.released.set()
        server.httpd.shutdown()
        server.httpd.server_close()


def _config(tmp_path: Path, url: str) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(3):  # ~300 chunks each: one index batch of ~15 slices
        (corpus / f"long{n}.txt").write_text(
            " ".join(f"word{n} {i}" for i in range(1500)), encoding="utf-8"
        )
    embedder = (
        f'[embedder]\ntype = "openai"\nbase_url = "{url}"\nmodel = "slow"\ndimension = 3\n'
        "timeout = 120\n"
    )
    return write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, access="{ public = true }"),
        embedder=embedder,
        extra='[chunker]\nmax_tokens = 16\n[scheduler]\nrefresh_every = "1h"\n',
    )


def _start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [HEADWATER, "-c", str(config), "run"],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


def test_sigterm_during_a_drain_stops_within_seconds_and_says_what_it_waits_for(
    tmp_path: Path, embeddings: SlowEmbeddings
) -> None:
    embeddings.delay = 1.0  # the batch's ~15 slices would take ~15 s
    config = _config(tmp_path, embeddings.url)
    log = tmp_path / "run.log"
    proc = _start(config, log)
    try:
        wait_for(lambda: embeddings.requests >= 1, 60, "the drain's first embedding call")
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert code == 0, text
    assert took < 10, (took, text)
    assert embeddings.requests < 10, text  # it did not embed the rest of the batch
    assert "SIGTERM: stopping; waiting for" in text and "indexing" in text, text
    status = json.loads(cli(tmp_path, "status", "--json").stdout)
    assert status["indexes"]["main"]["pending"] == 3  # left for the next drain


def test_a_second_signal_aborts_at_once(tmp_path: Path, embeddings: SlowEmbeddings) -> None:
    embeddings.delay = 60.0  # one embedding call outlasts the test
    config = _config(tmp_path, embeddings.url)
    log = tmp_path / "run.log"
    proc = _start(config, log)
    try:
        wait_for(lambda: embeddings.requests >= 1, 60, "the drain's first embedding call")
        proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "send it again to abort" in log.read_text(), 10, "the stop line")
        assert proc.poll() is None  # still waiting for the call in flight
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert code == 128 + signal.SIGTERM, text
    assert took < 5, (took, text)
    assert "SIGTERM again: aborting now" in text, text
