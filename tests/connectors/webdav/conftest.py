"""Fixtures for the webdav connector: a real WsgiDAV server in its own process.

WsgiDAV serves a temporary folder on 127.0.0.1 with Basic auth (one user), using its
bundled ``ext-wsgiutils`` server; its log (one line per request) lets tests count GETs.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from webdav_support import PASSWORD, USER, DavServer

from ports import free_port


@pytest.fixture(scope="session")
def dav_server() -> Iterator[DavServer]:
    yield from _serve("ext-wsgiutils")


@pytest.fixture(scope="session")
def decoding_dav_server() -> Iterator[DavServer]:
    """WsgiDAV behind wsgiref, which percent-decodes request paths as production servers
    do (ext-wsgiutils answers 404 to ``/Team%20Share/``); its log has no request lines."""
    yield from _serve("wsgiref")


def _serve(server: str) -> Iterator[DavServer]:
    base = Path(tempfile.mkdtemp(prefix="hw-wsgidav-"))
    base.chmod(0o755)
    root = base / "root"
    root.mkdir()
    port = free_port()
    config = base / "wsgidav.yaml"
    config.write_text(
        f"host: 127.0.0.1\nport: {port}\nserver: {server}\nverbose: 3\n"
        f'provider_mapping:\n  "/": "{root}"\n'
        "http_authenticator:\n  domain_controller: null\n  accept_basic: true\n"
        "  accept_digest: false\n  default_to_digest: false\n"
        f'simple_dc:\n  user_mapping:\n    "*":\n      "{USER}":\n        password: "{PASSWORD}"\n'
        "middleware_stack:\n  - wsgidav.error_printer.ErrorPrinter\n"
        "  - wsgidav.http_authenticator.HTTPAuthenticator\n"
        "  - dav_faults.FailingPropfind\n"
        "  - wsgidav.request_resolver.RequestResolver\n"
    )
    log = base / "wsgidav.log"
    out = log.open("w")
    wsgidav = Path(sys.executable).with_name("wsgidav")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    proc = subprocess.Popen(
        [str(wsgidav), "--config", str(config)], stdout=out, stderr=out, env=env
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"wsgidav did not start: {log.read_text()}") from None
            time.sleep(0.05)
    yield DavServer(url=f"http://127.0.0.1:{port}", root=root, log=log)
    proc.terminate()
    proc.wait(timeout=10)
    out.close()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def share(dav_server: DavServer) -> tuple[str, Path]:
    """A fresh folder on the server: (its URL, its directory on disk)."""
    name = f"s{uuid.uuid4().hex[:10]}"
    folder = dav_server.root / name
    folder.mkdir()
    return f"{dav_server.url}/{name}/", folder
