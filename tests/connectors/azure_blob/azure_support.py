"""Helpers for the azure_blob connector tests: Azurite (Microsoft's Blob emulator, from
npm) on a free port, signed admin requests to fill it, an account SAS, and a connector
factory. Azurite is installed by scripts/setup.sh into .ci/azurite."""

from __future__ import annotations

import base64
import hmac
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
from pydantic import SecretStr

from headwater.connectors.azure_blob import AzureBlobConnector, AzureBlobOptions
from headwater.connectors.azure_blob._auth import DEV_ACCOUNT, DEV_KEY, Credentials
from headwater.connectors.base import SourceContext
from ports import free_port

ROOT = Path(__file__).resolve().parents[3]
INSTALL = "npm install --no-audit --no-fund --prefix .ci/azurite azurite@3.37.0"


def azurite_command() -> Path:
    """The azurite-blob launcher: $HEADWATER_AZURITE, .ci/azurite, or on PATH."""
    candidates = [
        os.environ.get("HEADWATER_AZURITE", ""),
        str(ROOT / ".ci" / "azurite" / "node_modules" / ".bin" / "azurite-blob"),
        shutil.which("azurite-blob") or "",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return Path(candidate)
    raise RuntimeError(
        f"Azurite is not installed; run `{INSTALL}` at the repository root "
        "(scripts/setup.sh does), or set HEADWATER_AZURITE to an azurite-blob launcher"
    )


@dataclass
class Azurite:
    """A running Azurite blob service and the signed requests the tests fill it with."""

    url: str  # the account's blob endpoint, path style: http://127.0.0.1:N/devstoreaccount1
    _client: httpx.Client = field(default_factory=httpx.Client, repr=False)  # kept alive

    @property
    def credentials(self) -> Credentials:
        return Credentials(self.url, DEV_ACCOUNT, key=base64.b64decode(DEV_KEY))

    def _call(self, method: str, path: str, body: bytes = b"", **headers: str) -> None:
        request = httpx.Request(method, f"{self.url}/{path}", content=body, headers=headers)
        self._client.send(self.credentials.authorize(request)).raise_for_status()

    def container(self) -> str:
        name = f"hw-{uuid.uuid4().hex[:12]}"
        self._call("PUT", f"{name}?restype=container")
        return name

    def put(
        self, container: str, key: str, body: str, content_type: str = "text/plain", **headers: str
    ) -> None:
        headers.update({"x-ms-blob-type": "BlockBlob", "Content-Type": content_type})
        self._call("PUT", f"{container}/{quote(key)}", body.encode(), **headers)

    def delete(self, container: str, key: str) -> None:
        self._call("DELETE", f"{container}/{quote(key)}")

    def connection_string(self, endpoint: str | None = None) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
            f"BlobEndpoint={endpoint or self.url};"
        )

    def account_sas(self, permissions: str = "rl", key: str = DEV_KEY) -> str:
        """An account SAS for the blob service (version 2019-12-12 string to sign)."""
        expiry = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        fields = [DEV_ACCOUNT, permissions, "b", "co", "", expiry, "", "http", "2019-12-12", ""]
        digest = hmac.new(base64.b64decode(key), "\n".join(fields).encode(), "sha256")
        sig = base64.b64encode(digest.digest()).decode()
        params = {"sv": "2019-12-12", "ss": "b", "srt": "co", "sp": permissions}
        return urlencode({**params, "se": expiry, "spr": "http", "sig": sig})


@contextmanager
def azurite(workdir: Path) -> Iterator[Azurite]:
    """Azurite's blob service in memory on a free port, ready when it answers HTTP."""
    port = free_port()
    command = [str(azurite_command()), "--blobHost", "127.0.0.1", "--blobPort", str(port)]
    command += ["--inMemoryPersistence", "--skipApiVersionCheck", "--silent"]
    url = f"http://127.0.0.1:{port}/{DEV_ACCOUNT}"
    with (workdir / "azurite.log").open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=log, cwd=workdir)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{url}?comp=list", timeout=1)
                    break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"Azurite did not start; see {workdir / 'azurite.log'}")
                time.sleep(0.1)
            yield Azurite(url)
        finally:
            proc.terminate()  # in-memory data: nothing to flush; Node may linger on sockets
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def make_connector(
    endpoint: str, container: str, state_dir: Path, **options: Any
) -> AzureBlobConnector:
    if not {"connection_string", "sas_token", "account_key"} & set(options):
        options["account_url"] = endpoint
        options["account_key"] = SecretStr(DEV_KEY)
    options.setdefault("retry_initial_wait", 0.0)
    opts = AzureBlobOptions(container=container, **options)
    return AzureBlobConnector(opts, SourceContext(source_id="azure-test", state_dir=state_dir))
