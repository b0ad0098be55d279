"""Fixtures for the s3 connector: moto's S3 API served over real HTTP on 127.0.0.1.

``s3_server`` runs moto in a thread behind a small WSGI wrapper that logs every request
(method and path), so tests can prove what was, and was not, downloaded.
``s3_auth_server`` is a second moto process with IAM checks on, to see a real 403.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.server import DomainDispatcherApplication, create_backend_app
from s3_support import S3Server
from werkzeug.serving import make_server

from ports import free_port


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    app = DomainDispatcherApplication(create_backend_app)
    port = free_port()
    server = S3Server(endpoint=f"http://127.0.0.1:{port}")

    def logging_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "") + "?" + environ.get("QUERY_STRING", "")
        server.requests.append((environ["REQUEST_METHOD"], path))
        refused = server.refuse_next_pages_of
        if refused and path.startswith(f"/{refused}") and "continuation-token" in path:
            start_response("403 Forbidden", [("Content-Type", "application/xml")])
            return [
                b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
                b"<Message>Access Denied</Message></Error>"
            ]
        return app(environ, start_response)

    httpd = make_server("127.0.0.1", port, logging_app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    httpd.shutdown()
    thread.join()


@pytest.fixture(scope="session")
def s3_auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto server that checks credentials (IAM), in its own process."""
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}
    moto = Path(sys.executable).with_name("moto_server")
    log = (tmp_path_factory.mktemp("moto") / "moto.log").open("w")
    proc = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)], env=env, stdout=log, stderr=log
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("moto_server did not start; see its log") from None
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    name = f"hw-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    return name
