"""`serve --workers 2` whose master is SIGKILLed: its workers end too, and the port is
freed (they used to go on serving, re-parented to PID 1, unsupervised)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import psutil
from api_support import Server, make_workspace

from ports import free_port


def spawned_workers(master: int) -> list[psutil.Process]:
    """The master's children that uvicorn spawned as workers (not multiprocessing's
    resource tracker)."""
    return [
        child
        for child in psutil.Process(master).children()
        if "spawn_main" in " ".join(child.cmdline())
    ]


def gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE  # dead, not yet reaped by PID 1
    except psutil.NoSuchProcess:
        return True


def wait_until(check: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(check())  # type: ignore[operator]


def test_workers_end_when_the_master_is_killed(tmp_path: Path) -> None:
    config = make_workspace(tmp_path)
    srv = Server(config, free_port(), tmp_path / "server.log", args=["--workers", "2"]).start()
    assert srv.process is not None
    workers = spawned_workers(srv.process.pid)
    assert len(workers) == 2, [w.cmdline() for w in workers]
    try:
        srv.process.send_signal(signal.SIGKILL)
        srv.process.wait(timeout=10)
        assert wait_until(lambda: all(gone(w) for w in workers), timeout=30), [
            (w.pid, w.status()) for w in workers if not gone(w)
        ]
        try:
            answered = httpx.get(srv.url + "/readyz", timeout=2).status_code
        except httpx.HTTPError:
            answered = None
        assert answered is None, f"something still answers on the port: {answered}"
    finally:
        for worker in workers:
            if not gone(worker):
                worker.kill()
