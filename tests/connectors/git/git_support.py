"""Helpers for the git connector tests: a real repository driven by the git CLI, a
connector factory, and a tiny HTTP server that answers every request with one status."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from headwater.connectors.base import SourceContext
from headwater.connectors.git import GitConnector, GitOptions

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Author",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Author",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


class GitRepo:
    """A working repository in a temporary directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ticks = 0
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    @property
    def url(self) -> str:
        return self.path.as_uri()

    def git(self, *args: str) -> str:
        self.ticks += 1
        when = f"2024-01-{self.ticks:02d}T12:00:00+00:00"
        env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], env=env, capture_output=True, check=True
        )
        return done.stdout.decode().strip()

    def write(self, path: str, text: str) -> None:
        target = self.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def blob(self, path: str) -> str:
        return self.git("rev-parse", f"HEAD:{path}")


def make_connector(url: str, state_dir: Path, **options: Any) -> GitConnector:
    return GitConnector(
        GitOptions(url=url, **options), SourceContext(source_id="git-test", state_dir=state_dir)
    )


@contextmanager
def http_status_server(status: int) -> Iterator[str]:
    """An HTTP server answering every request with ``status`` (as a refusing git host)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            if status == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/team/handbook.git"
    finally:
        server.shutdown()
        thread.join()
