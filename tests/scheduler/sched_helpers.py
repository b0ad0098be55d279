"""Helpers for scheduler tests: configs with several sources, real `headwater` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, select
from sqlalchemy.exc import OperationalError, ProgrammingError

from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from workspace_helpers import filesystem_source, write_config

HEADWATER = str(Path(sys.executable).parent / "headwater")


def write_files(root: Path, count: int, prefix: str = "doc") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / f"{prefix}{i:05d}.txt").write_text(f"document {prefix} {i} about topic {i % 7}\n")
    return root


def sources_config(
    directory: Path,
    manifest_url: str | None,
    roots: dict[str, Path],
    *,
    source_extra: str = 'refresh_every = "2s"\n',
    scheduler: str = "",
) -> Path:
    sources = "".join(
        filesystem_source(root, source_id=sid, access="{ public = true }", extra=source_extra)
        for sid, root in roots.items()
    )
    return write_config(directory, manifest_url=manifest_url, sources=sources, extra=scheduler)


def cli(directory: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HEADWATER, "-c", str(directory), *args],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Daemon:
    """A `headwater run` process; stopped (and reaped) by the fixture at the end. Its
    stderr goes to a file, so a test can wait on what it has logged so far."""

    def __init__(self, directory: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (lives as long as the daemon)
        self.proc = subprocess.Popen(
            [HEADWATER, "-c", str(directory), "run", *args],
            env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )

    def stderr_so_far(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float) -> str:
        """Wait for the process to exit by itself; what it wrote to stderr."""
        self.proc.communicate(timeout=timeout)
        return self.stderr_so_far()

    def stop(self, timeout: float = 30) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        stderr = self.wait(timeout)
        return self.proc.returncode, stderr


def run_rows(url: str) -> list[dict[str, Any]]:
    """Every run, oldest first ([] while the manifest is not created yet)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(t.runs).order_by(t.runs.c.started_at)).all()
        return [dict(r._mapping) for r in rows]
    except (ProgrammingError, OperationalError):
        return []
    finally:
        engine.dispose()


def lease_rows(url: str) -> list[dict[str, Any]]:
    """Leases still held (a released lease keeps its row, expired, so its epoch survives)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(select(t.leases)).all()]
    finally:
        engine.dispose()
    return [r for r in rows if as_utc(r["expires_at"]) > utcnow()]


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
