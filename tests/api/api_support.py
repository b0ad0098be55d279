"""A real ``headwater serve`` process on a free local port, over a small workspace.

The workspace has a filesystem source (``docs``, group ``staff``), a push source
(``inbox``, default ACL: nobody) and the fake embedder. Four keys: admin, ingest (for
``inbox`` only unless ``ingest_sources`` says otherwise), a search key with fixed principals and a search key that asserts principals. The server's
stdout and stderr go to a log file that tests read (a key must never appear in it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

KEYS = {
    "admin": "admin-secret-0123456789abcdef",
    "ingest": "ingest-secret-0123456789abcdef",
    "search": "search-secret-0123456789abcdef",
    "backend": "backend-secret-0123456789abcdef",
}

CONFIG = """
[workspace]
tenant = "acme"

[embedder]
type = "fake"

[[source]]
id = "docs"
type = "filesystem"
root = "corpus"
access = {{ groups = ["staff"] }}

[[source]]
id = "inbox"
type = "push"
{extra}
[[api.keys]]
name = "ops"
secret = "${{HW_ADMIN_KEY}}"
role = "admin"

[[api.keys]]
name = "loader"
secret = "${{HW_INGEST_KEY}}"
role = "ingest"
sources = {ingest_sources}

[[api.keys]]
name = "app"
secret = "${{HW_SEARCH_KEY}}"
role = "search"
principals = {{ users = ["ann@acme.test"], groups = ["staff"] }}

[[api.keys]]
name = "backend"
secret = "${{HW_BACKEND_KEY}}"
role = "search"
assert_principals = true
"""


def server_env(src: Path | None = None) -> dict[str, str]:
    """The server's environment: the API keys, no downloads, and ``src`` (this checkout's
    own by default) first on the import path."""
    env = dict(os.environ)
    src = src or Path(__file__).resolve().parents[2] / "src"
    env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(
        HW_ADMIN_KEY=KEYS["admin"],
        HW_INGEST_KEY=KEYS["ingest"],
        HW_SEARCH_KEY=KEYS["search"],
        HW_BACKEND_KEY=KEYS["backend"],
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def make_workspace(
    root: Path, extra: str = "", ingest_sources: tuple[str, ...] = ("inbox",)
) -> Path:
    corpus = root / "corpus"
    (corpus / "guides").mkdir(parents=True, exist_ok=True)
    (corpus / "guides" / "vacation.md").write_text(
        "# Vacation policy\n\nEvery employee gets 25 vacation days per year.\n"
    )
    (corpus / "guides" / "expenses.md").write_text(
        "# Expenses\n\nThe reimbursement limit for meals is 60 euros per day.\n"
    )
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    config = root / "headwater.toml"
    sources = "[" + ", ".join(f'"{s}"' for s in ingest_sources) + "]"
    config.write_text(CONFIG.format(extra=extra, ingest_sources=sources))
    return config


@dataclass
class Server:
    config: Path
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    args: list[str] = field(default_factory=list)
    src: Path | None = None  # the code that serves: this checkout's by default

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Server:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headwater",
                "-c",
                str(self.config),
                "serve",
                "--port",
                str(self.port),
                *self.args,
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=server_env(self.src),
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"server exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"server did not become ready: {self.log.read_text()[-3000:]}")

    def __enter__(self) -> Server:
        """Started (``with Server(...) as srv:``), stopped on leaving the block."""
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def client(self, role: str | None = "admin") -> httpx.Client:
        headers = {"Authorization": f"Bearer {KEYS[role]}"} if role else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def wait_for(check: object, timeout: float = 20.0) -> None:
    """Poll ``check()`` until it is truthy (background indexing is asynchronous)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")
