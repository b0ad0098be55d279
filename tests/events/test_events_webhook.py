"""Change events to a webhook: a local HTTP server (a real one, in a thread) checks each
POST's ``X-Headwater-Signature`` (HMAC-SHA256 of the body under the shared secret), and
refuses the first one with 503 so the retry with backoff is exercised. Also the
``[events]`` table's validation."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from headwater import Workspace
from headwater.config import EventsSection
from headwater.events.webhook import signature, verify
from workspace_helpers import filesystem_source, write_config

SECRET = "s3cret-for-tests"


class Receiver(ThreadingHTTPServer):
    """Records verified events; answers 503 to the first POST, 401 to a bad signature."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.events: list[dict[str, Any]] = []
        self.ids: list[str] = []
        self.refused = 0
        self.bad = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hooks/headwater"


class Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        with self.server.lock:
            if not hmac.compare_digest(expected, self.headers.get("X-Headwater-Signature", "")):
                self.server.bad += 1
                code = 401
            elif self.server.refused == 0:
                self.server.refused += 1
                code = 503
            else:
                self.server.events.append(json.loads(body))
                self.server.ids.append(self.headers["X-Headwater-Event-Id"])
                code = 204
        self.send_response(code)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_events_are_posted_signed_in_order_and_retried(
    tmp_path: Path, corpus: Path, receiver: Receiver
) -> None:
    events = f'[events]\ntype = "webhook"\nurl = "{receiver.url}"\nsecret = "{SECRET}"\n'
    cfg = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus), extra=events)
    with Workspace.open(cfg) as ws:
        ws.sync()
        (corpus / "readme.md").unlink()
        ws.sync()
        assert ws.manifest.outbox.depth() == 0
        assert ws.status()["events"]["type"] == "webhook"
    assert receiver.refused == 1 and receiver.bad == 0  # the 503 was retried, not dropped
    kinds = [(e["object_id"], e["revision"], e["kind"]) for e in receiver.events]
    readme = [k for k in kinds if k[0] == "readme.md"]
    assert readme == [
        ("readme.md", 1, "upserted"), ("readme.md", 1, "applied"),
        ("readme.md", 2, "deleted"), ("readme.md", 2, "applied"),
    ]  # fmt: skip
    assert len(receiver.events) == 12 and len(set(receiver.ids)) == 12
    assert all(e["tenant"] == "acme" and e["source"] == "docs" for e in receiver.events)


def test_a_wrong_secret_is_told_apart() -> None:
    body = b'{"kind":"upserted"}'
    good = signature(SECRET, body)
    assert good.startswith("sha256=") and verify(SECRET, body, good)
    assert not verify("other", body, good)
    assert not verify(SECRET, body + b" ", good)
    assert not verify(SECRET, body, None)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"type": "webhook", "url": "http://x/h"}, "needs a secret"),
        ({"type": "webhook", "secret": "x"}, "not a webhook address"),
        ({"type": "nats", "url": "http://x"}, "not a NATS server address"),
        ({"type": "nats", "stream": "A.B"}, "not a JetStream stream name"),
        ({"type": "nats", "subject_prefix": "a.*"}, "not a NATS subject prefix"),
    ],
)
def test_the_events_table_is_validated(table: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EventsSection.model_validate(table)


def test_the_documented_defaults() -> None:
    section = EventsSection.model_validate({"type": "nats"})
    assert (section.address, section.stream, section.subject_prefix) == (
        "nats://127.0.0.1:4222", "HEADWATER", "headwater",
    )  # fmt: skip
