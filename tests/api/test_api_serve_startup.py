"""``headwater serve`` that cannot start: one line that says why, and the usual exit code.

It printed uvicorn's traceback of the ASGI lifespan (a manifest that cannot be opened)
or a bare uvicorn log line (a port in use), and exited 3, which the CLI reserves for
"done, but a person must look".
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from api_support import make_workspace, server_env


def serve(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", "-c", str(config), "serve", *args],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )


def test_a_port_in_use_is_a_configuration_error(tmp_path: Path) -> None:
    config = make_workspace(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve(config, "--port", str(port))
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_manifest_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    config = make_workspace(tmp_path)
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    text = config.read_text().replace(
        "[embedder]", f'[manifest]\nurl = "postgresql+psycopg://u@127.0.0.1:{dead}/x"\n\n[embedder]'
    )
    config.write_text(text)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    done = serve(config, "--port", str(port))
    assert done.returncode == 1, done.stderr[-2000:]
    assert "cannot open the manifest" in done.stderr
    assert "Traceback" not in done.stderr and "Application startup failed" not in done.stderr
