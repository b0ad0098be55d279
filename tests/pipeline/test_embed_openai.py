"""The OpenAI-compatible embedder against a real local HTTP server speaking the API."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import SecretStr

from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.pipeline.embed import OpenAIEmbedder, WhitespaceCounter

KEY = "sekret"


@dataclass
class Script:
    """What the server does: forced replies first, then the normal API."""

    forced: list[tuple[int, dict[str, str], float]] = field(default_factory=list)
    requests: list[list[str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def force(self, status: int, headers: dict[str, str] | None = None, delay: float = 0) -> None:
        self.forced.append((status, headers or {}, delay))


def vector_of(text: str) -> list[float]:
    return [float(len(text)), 3.0, 4.0]


class Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs: list[str] = body["input"]
        with self.script.lock:
            self.script.requests.append(inputs)
            forced = self.script.forced.pop(0) if self.script.forced else None
        if self.path != "/v1/embeddings":
            return self.reply(404, {"error": "no such route"})
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            return self.reply(401, {"error": "bad key"})
        if forced:
            status, headers, delay = forced
            time.sleep(delay)
            return self.reply(status, {"error": "forced"}, headers)
        if any("BAD" in text for text in inputs):
            return self.reply(400, {"error": {"message": "input rejected"}})
        if any("POISON" in text for text in inputs):
            return self.reply(500, {"error": "internal error"})
        data = [
            {"object": "embedding", "index": i, "embedding": vector_of(text)}
            for i, text in enumerate(inputs)
        ]
        self.reply(200, {"object": "list", "data": data[::-1], "model": body["model"]})

    def reply(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)


@dataclass
class Server:
    url: str
    script: Script


@pytest.fixture()
def server() -> Iterator[Server]:
    script = Script()
    handler = type("ScriptedHandler", (Handler,), {"script": script})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Server(f"http://127.0.0.1:{httpd.server_address[1]}/v1", script)
    finally:
        httpd.shutdown()
        httpd.server_close()


def client(url: str, **options: object) -> OpenAIEmbedder:
    defaults: dict[str, object] = {
        "model": "test-model",
        "api_key": SecretStr(KEY),
        "batch_size": 2,
        "backoff_initial": 0.01,
        "backoff_max": 0.05,
        "counter": WhitespaceCounter(),
        "timeout": 5.0,
    }
    defaults.update(options)
    return OpenAIEmbedder(base_url=url, **defaults)  # type: ignore[arg-type]


def close(actual: list[list[float]] | list[object], expected: list[list[float]]) -> bool:
    return len(actual) == len(expected) and all(
        isinstance(a, list) and a == pytest.approx(e) for a, e in zip(actual, expected, strict=True)
    )


def unit(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def test_batches_in_order_and_normalized(server: Server) -> None:
    embedder = client(server.url, dimension=3)
    texts = ["a", "bb", "ccc"]
    assert close(embedder.embed(texts), [unit(vector_of(t)) for t in texts])
    assert server.script.requests == [["a", "bb"], ["ccc"]]
    assert embedder.model_id == "openai-compatible/test-model"


def test_dimension_is_probed_once_when_not_configured(server: Server) -> None:
    embedder = client(server.url)
    assert embedder.dimension == 3 and embedder.dimension == 3
    assert len(server.script.requests) == 1


def test_429_waits_as_long_as_retry_after_asks(server: Server) -> None:
    server.script.force(429, {"Retry-After": "1"})
    embedder = client(server.url, dimension=3)
    started = time.monotonic()
    assert len(embedder.embed(["x"])) == 1
    assert time.monotonic() - started >= 1.0
    assert len(server.script.requests) == 2


def test_5xx_and_timeouts_are_retried(server: Server) -> None:
    server.script.force(503)
    server.script.force(502)
    server.script.force(200, delay=1.0)  # slower than the client's timeout
    embedder = client(server.url, dimension=3, timeout=0.3)
    assert close(embedder.embed(["x", "y"]), [unit(vector_of("x"))] * 2)
    assert len(server.script.requests) == 4


def test_one_input_that_always_fails_fails_alone(server: Server) -> None:
    embedder = client(server.url, dimension=3, batch_size=4, max_attempts=3)
    texts = ["one", "POISON two", "three", "four"]
    outcomes = embedder.embed_each(texts)
    failed = outcomes[1]
    assert isinstance(failed, ItemError) and not failed.permanent
    assert failed.error_class == "embed_error"
    others = [o for i, o in enumerate(outcomes) if i != 1]
    assert close(others, [unit(vector_of(t)) for t in ("one", "three", "four")])
    with pytest.raises(ItemError):
        embedder.embed(texts)


def test_a_rejected_input_fails_alone_without_retries(server: Server) -> None:
    embedder = client(server.url, dimension=3, batch_size=3)
    outcomes = embedder.embed_each(["ok", "BAD input", "fine"])
    assert isinstance(outcomes[1], ItemError) and outcomes[1].permanent
    assert "input rejected" in str(outcomes[1])
    assert not isinstance(outcomes[0], ItemError) and not isinstance(outcomes[2], ItemError)
    assert len(server.script.requests) == 4  # the batch once, then each text once


def test_endpoint_down_raises_transient_for_the_batch() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = client(f"http://127.0.0.1:{port}/v1", dimension=3, max_attempts=2)
    with pytest.raises(TransientError):
        embedder.embed_each(["a", "b", "c", "d"])


def test_bad_key_and_wrong_url_are_config_errors(server: Server) -> None:
    with pytest.raises(CredentialError):
        client(server.url, api_key="wrong", dimension=3).embed(["x"])
    with pytest.raises(ConfigError):
        client(server.url + "/nested", dimension=3).embed(["x"])


def test_wrong_dimension_is_a_config_error(server: Server) -> None:
    with pytest.raises(ConfigError):
        client(server.url, dimension=5).embed(["x"])


def test_repr_never_shows_the_key(server: Server) -> None:
    assert KEY not in repr(client(server.url))


def test_default_counter_is_the_bundled_tokenizer(server: Server) -> None:
    embedder = OpenAIEmbedder(base_url=server.url, model="m", dimension=3)
    assert embedder.count_tokens("Hello, tokenizer world!") == 6
    assert embedder.count_tokens_batch(["a b", "c"]) == [2, 1]
