"""`headwater sync` with other syncs about: busy sources skipped, sources run at once.

Real processes: a first `headwater sync` stopped at a failpoint holds one source's lease
while a second syncs every source; it reports the busy one as `skipped (busy)` with the
holder, reports the others' runs and exits 75. And web sources behind a local server
that answers only once requests of enough sources are in flight at once: `sync` runs
`--max-concurrent` (default 2) sources in parallel, proven by the server, not by a clock.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from headwater.errors import EXIT_BUSY
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]
PUBLIC = "{ public = true }"
WAIT_S = 60.0  # deadlines of a broken test; a passing one never reaches them
HOLD_S = 20.0  # a page waits this long at most for other sources (the client's timeout: 30)


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", **extra}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HEADWATER, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300
    )


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {WAIT_S} s waiting for {what}")
        time.sleep(0.05)


def stopped(process: subprocess.Popen[str]) -> bool:
    stat = Path(f"/proc/{process.pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def _three_sources(tmp_path: Path) -> str:
    sources = ""
    for source_id in ("alpha", "beta", "gamma"):
        root = tmp_path / source_id
        root.mkdir()
        for n in range(3):
            (root / f"doc{n}.txt").write_text(f"{source_id} document {n} about leases.\n")
        sources += filesystem_source(root, source_id, access=PUBLIC, extra="batch_size = 1\n")
    return sources


def test_a_source_held_by_another_sync_is_skipped_and_the_others_are_reported(
    tmp_path: Path,
) -> None:
    write_config(
        tmp_path,
        manifest_url=None,
        sources=_three_sources(tmp_path),
        extra="[sync]\nlease_seconds = 600\n",
    )
    first = subprocess.Popen(
        [*HEADWATER, "sync", "beta", "--no-index"],
        cwd=tmp_path,
        env=_env(HEADWATER_FAILPOINTS="after_manifest_commit:stop"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: first.poll() is None and stopped(first), "the first sync to stop")
        second = run(["sync", "--json"], tmp_path)
        assert second.returncode == EXIT_BUSY == 75, second.stderr
        report = json.loads(second.stdout)
        assert [(r["source"], r["status"]) for r in report["runs"]] == [
            ("alpha", "succeeded"),
            ("gamma", "succeeded"),
        ]
        # indexed: alpha's and gamma's documents, and the one beta's run committed
        assert report["index"]["documents"]["replaced"] == 7
        (skipped,) = report["skipped"]
        assert skipped["source"] == "beta" and skipped["reason"] == "busy"
        assert f":{first.pid}:" in skipped["holder"] and skipped["until"]
        assert f"beta: skipped (busy): being synced by {skipped['holder']}" in second.stderr
        human = run(["sync"], tmp_path)
        assert human.returncode == 75, human.stderr
        assert "skipped (busy)" in human.stdout and "beta" in human.stdout
        assert "alpha" in human.stdout and "gamma" in human.stdout
        assert f"being synced by {skipped['holder']}" in human.stderr
        first.send_signal(signal.SIGCONT)
        _, stderr = first.communicate(timeout=120)
        assert first.returncode == 0, stderr
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGCONT)
            first.kill()
            first.wait()
    after = run(["sync", "--json"], tmp_path)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["skipped"] == []
    runs = json.loads(run(["runs", "beta", "--json"], tmp_path).stdout)["runs"]
    assert runs[-1]["status"] == "succeeded" and runs[-1]["counts"]["new"] == 3


class Site:
    """Pages ``/sN/`` for N sources; a request is answered only once requests of
    ``need`` different sources are in flight together (or after ``HOLD_S``)."""

    def __init__(self, need: int) -> None:
        self.need = need
        self.overlapped = False
        self.cond = threading.Condition()
        self.inflight: dict[str, int] = {}
        self.most = 0
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                source = self.path.strip("/").split("/")[0]
                with site.cond:
                    site.inflight[source] = site.inflight.get(source, 0) + 1
                    busy = sum(1 for n in site.inflight.values() if n)
                    site.most = max(site.most, busy)
                    if busy >= site.need:
                        site.overlapped = True
                        site.cond.notify_all()
                    site.cond.wait_for(lambda: site.overlapped, timeout=HOLD_S)
                    site.inflight[source] -= 1
                body = (
                    f"<html><head><title>{source}</title></head><body><p>The page of "
                    f"{source}, about parallel syncs.</p></body></html>"
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]

    def sources(self, count: int) -> str:
        return "".join(
            f'[[source]]\nid = "s{n}"\ntype = "web"\n'
            f'start_urls = ["http://127.0.0.1:{self.port}/s{n}/"]\n'
            "respect_robots = false\nrequests_per_second = 50.0\naccess = { public = true }\n"
            for n in range(count)
        )


@pytest.fixture
def site() -> Iterator[Callable[[int], Site]]:
    made: list[Site] = []

    def make(need: int) -> Site:
        made.append(Site(need))
        threading.Thread(target=made[-1].httpd.serve_forever, daemon=True).start()
        return made[-1]

    yield make
    for s in made:
        s.httpd.shutdown()
        s.httpd.server_close()


@pytest.mark.parametrize(("flags", "need"), [((), 2), (("--max-concurrent", "3"), 3)])
def test_sync_runs_max_concurrent_sources_at_once(
    tmp_path: Path, site: Callable[[int], Site], flags: tuple[str, ...], need: int
) -> None:
    web = site(need)
    write_config(tmp_path, manifest_url=None, sources=web.sources(4))
    result = run(["sync", "--json", "--no-index", *flags], tmp_path)
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    assert [(r["source"], r["status"]) for r in runs] == [
        (f"s{n}", "succeeded") for n in range(4)
    ], runs
    assert all(r["counts"]["new"] == 1 for r in runs), runs
    assert web.overlapped and web.most == need  # never more sources at once than allowed


def test_ctrl_c_cancels_every_source_running_at_once(tmp_path: Path) -> None:
    sources = ""
    for source_id in ("left", "right"):
        root = tmp_path / source_id
        root.mkdir()
        for n in range(1500):
            (root / f"doc{n:05d}.txt").write_text(f"{source_id} document {n}.\n")
        sources += filesystem_source(root, source_id, access=PUBLIC, extra="batch_size = 1\n")
    write_config(tmp_path, manifest_url=None, sources=sources)
    proc = subprocess.Popen(
        [*HEADWATER, "sync", "--no-index"],
        cwd=tmp_path,
        env=_env(HEADWATER_PROGRESS_INTERVAL="0.2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + WAIT_S
        moving: set[str] = set()
        while moving != {"left", "right"} and time.monotonic() < deadline:
            line = proc.stderr.readline()  # a progress line per running source every 0.2 s
            moving.update(s for s in ("left", "right") if f"sync {s}: " in line)
        assert moving == {"left", "right"}, "both sources should be running at once"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    for source_id in ("left", "right"):
        runs = json.loads(run(["runs", source_id, "--json"], tmp_path).stdout)["runs"]
        assert runs[0]["status"] == "cancelled", runs
        assert runs[0]["counts"]["seen"] < 1500
