"""Live latency: change → searchable for a watched file, a webhook hint and a push, and
revoke → hidden, through one real ``headwater serve --with-scheduler`` process.

In a scratch directory: the DEFAULT model (``[embedder]`` left out: the bundled
all-MiniLM-L6-v2, ONNX int8) and the default embedded index, three sources:

- ``share``: a filesystem root with ``watch = true`` (inotify → hint → targeted read);
- ``gh``: a github source on the fake GitHub API of tests/fakes (an issue edited there,
  then a signed ``issues`` webhook to ``POST /v1/hooks/gh`` → hint → targeted read);
- ``inbox``: a push source (``PUT /v1/sources/inbox/documents/{id}``).

Each round edits one one-page document per source with a fresh token, and times from
the moment before the change until ``POST /v1/search`` (keyword mode, the token as
query) returns the document; then a push of the same text with an ACL without the
searching user, timed until the search no longer returns it (revoke → hidden). The
search is polled every ``POLL_S``. It prints p50/p95/max per kind and the load average
before and after, as JSON. Run it under ``nice``:

    PYTHONPATH=src nice .venv/bin/python bench/live_latency.py --edits 100
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fakes.github import FakeGithub  # the fake GitHub API of the tests

SECRET = "bench-hook-secret-0123456789"
USER = "ann@example.com"
POLL_S = 0.02
TIMEOUT_S = 120.0
PAGE = " ".join(f"Paragraph {n} of a one page note about the quarterly plan." for n in range(40))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(root: Path, share: Path, gh: FakeGithub) -> Path:
    config = root / "headwater.toml"
    config.write_text(
        f"""[workspace]
tenant = "bench"
state_dir = "state"
[[source]]
id = "share"
type = "filesystem"
root = "{share}"
watch = true
refresh_every = "1h"
access = {{ users = ["{USER}"] }}
[[source]]
id = "gh"
type = "github"
base_url = "{gh.url}"
token = "${{HW_BENCH_GH_TOKEN}}"
repos = ["octo/site"]
webhook_secret = "${{HW_BENCH_HOOK_SECRET}}"
refresh_every = "1h"
access = {{ public = true }}
[[source]]
id = "inbox"
type = "push"
"""
    )
    return config


def wait_until(check: Callable[[], bool], what: str) -> float:
    """Poll ``check`` until true; the time it took (raises after ``TIMEOUT_S``)."""
    start = time.monotonic()
    while time.monotonic() - start < TIMEOUT_S:
        if check():
            return time.monotonic() - start
        time.sleep(POLL_S)
    raise TimeoutError(f"not in {TIMEOUT_S}s: {what}")


class Bench:
    """One server, three sources, and the timed changes."""

    def __init__(self, url: str, share: Path, gh: FakeGithub) -> None:
        self.http = httpx.Client(base_url=url, timeout=30)
        self.share = share
        self.gh = gh

    def found(self, token: str, source: str, object_id: str, user: str = USER) -> bool:
        body = {"query": token, "mode": "keyword", "k": 5, "user": user, "sources": [source]}
        answer = self.http.post("/v1/search", json=body)
        answer.raise_for_status()
        hits = answer.json()["results"]
        return any(token in r["chunk"] or token in r["snippet"] for r in hits)

    def watched(self, i: int) -> float:
        token = f"fsw{uuid.uuid4().hex[:12]}"
        name = f"note{i % 10}.md"
        start = time.monotonic()
        (self.share / name).write_text(f"# Note {i}\n\n{PAGE} {token}\n")
        wait_until(lambda: self.found(token, "share", name), name)
        return time.monotonic() - start

    def webhook(self, i: int) -> float:
        token = f"hook{uuid.uuid4().hex[:12]}"
        number = i % 10 + 1
        start = time.monotonic()
        self.gh.touch("octo/site", number, body=f"{PAGE} {token}")
        payload = {"action": "edited", "issue": {"number": number},
                   "repository": {"full_name": "octo/site"}}  # fmt: skip
        body = json.dumps(payload).encode()
        mac = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        answer = self.http.post("/v1/hooks/gh", content=body, headers={
            "X-GitHub-Event": "issues", "X-Hub-Signature-256": f"sha256={mac}"})  # fmt: skip
        assert answer.status_code == 202, answer.text
        object_id = f"octo/site/issues/{number}"
        wait_until(lambda: self.found(token, "gh", object_id), object_id)
        return time.monotonic() - start

    def push(self, i: int, version: int, users: list[str], token: str) -> None:
        answer = self.http.put(f"/v1/sources/inbox/documents/doc{i % 10}", json={
            "version": version, "title": f"Doc {i}", "text": f"{PAGE} {token}",
            "access": {"users": users}})  # fmt: skip
        assert answer.status_code in (200, 201), answer.text

    def pushed(self, i: int, version: int) -> tuple[float, float]:
        token = f"push{uuid.uuid4().hex[:12]}"
        object_id = f"doc{i % 10}"
        start = time.monotonic()
        self.push(i, version, [USER], token)
        wait_until(lambda: self.found(token, "inbox", object_id), object_id)
        shown = time.monotonic() - start
        start = time.monotonic()
        self.push(i, version + 1, ["bob@example.com"], token)
        wait_until(lambda: not self.found(token, "inbox", object_id), f"{object_id} hidden")
        return shown, time.monotonic() - start


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_s": round(statistics.median(ordered), 3),
            "p95_s": round(p95, 3), "max_s": round(ordered[-1], 3)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=100, help="changes per kind")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, FakeGithub() as gh:
        root = Path(tmp)
        share = root / "share"
        share.mkdir()
        for n in range(10):
            (share / f"note{n}.md").write_text(f"# Note {n}\n\n{PAGE}\n")
        gh.add_repo("octo/site")
        for n in range(10):
            gh.add("octo/site", f"Issue {n + 1}", PAGE)
        config = write_config(root, share, gh)
        port = free_port()
        env = dict(os.environ, HW_BENCH_GH_TOKEN=gh.token, HW_BENCH_HOOK_SECRET=SECRET)
        log = (root / "server.log").open("wb")
        server = subprocess.Popen(
            [sys.executable, "-m", "headwater", "-c", str(config), "serve", "--port", str(port),
             "--with-scheduler"], stdout=log, stderr=subprocess.STDOUT, env=env)  # fmt: skip
        try:
            bench = Bench(f"http://127.0.0.1:{port}", share, gh)
            ready = time.monotonic()

            def up() -> bool:
                try:
                    return bench.found("Issue", "gh", "") and bench.found("Note", "share", "")
                except httpx.HTTPError:
                    return False

            wait_until(up, "the first sync of share and gh")
            startup = time.monotonic() - ready
            times: dict[str, list[float]] = {"watch": [], "webhook": [], "push": [], "revoke": []}
            for i in range(args.edits):
                times["watch"].append(bench.watched(i))
                times["webhook"].append(bench.webhook(i))
                shown, hidden = bench.pushed(i, 2 * i + 1)
                times["push"].append(shown)
                times["revoke"].append(hidden)
        except BaseException:
            print((root / "server.log").read_text()[-4000:], file=sys.stderr)
            raise
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.close()
    report: dict[str, Any] = {
        "edits": args.edits,
        "model": "default (bundled all-MiniLM-L6-v2, onnx-int8)",
        "startup_to_first_sync_s": round(startup, 1),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        **{kind: summary(values) for kind, values in times.items()},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
