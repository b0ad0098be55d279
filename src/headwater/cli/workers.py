"""``headwater worker`` (a Celery worker for this workspace, or a NATS worker with
``[executor] type = "nats"``) and ``headwater workers``."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import typer

from headwater.cli.common import app, err, out, print_json, run_command, state, usage_error
from headwater.config import load_config

QUEUE_NAMES = ("sync", "index")


@app.command()
def worker(
    queues: str = typer.Option(
        "sync,index", "--queues", "-Q", help="Which queues: sync, index or both."
    ),
    concurrency: int = typer.Option(
        1, "--concurrency", help="Task slots (processes) in this worker.", min=1
    ),
    pool: str = typer.Option("prefork", "--pool", help="prefork (one process per slot) or solo."),
    loglevel: str = typer.Option("INFO", "--loglevel", help="Celery's log level."),
    hostname: str | None = typer.Option(
        None, "--hostname", "-n", help="Worker name (default: celery@host)."
    ),
) -> None:
    """Run a worker (Celery, or NATS with that executor) that executes this workspace's runs."""

    def body() -> None:
        from headwater.config import executor_warnings
        from headwater.executor.celery_app import ENV_CONFIG, create_app

        wanted = [q.strip() for q in queues.split(",") if q.strip()]
        unknown = [q for q in wanted if q not in QUEUE_NAMES]
        if unknown or not wanted:
            usage_error(
                f"--queues {queues!r}: expected a comma list of sync, index; got {unknown or 'nothing'}"
            )
        if pool not in ("prefork", "solo"):
            usage_error(f"--pool {pool!r}: expected prefork or solo")
        loaded = load_config(state.config)
        for warning in executor_warnings(loaded.config):
            err.print(f"[yellow]warning:[/] {warning}")
        if loaded.config.executor.type == "nats":  # --queues and --pool are Celery's
            _nats_worker(loaded.path, concurrency, hostname, loglevel)
            return
        os.environ[ENV_CONFIG] = str(loaded.path)
        celery = create_app(loaded)
        names = loaded.config.executor.queues
        argv = ["worker", "-Q", ",".join(getattr(names, q) for q in wanted)]
        argv += ["--concurrency", str(concurrency), "--pool", pool, "--loglevel", loglevel]
        argv += ["--without-mingle", "--without-gossip"]
        if hostname:
            argv += ["--hostname", hostname]
        celery.worker_main(argv)

    run_command(body)


def _nats_worker(config: Path, concurrency: int, name: str | None, loglevel: str) -> None:
    """Consume the NATS work-queue stream until SIGTERM (``executor.nats_worker``)."""
    from headwater.executor.nats_worker import run_worker

    level = logging.getLevelName(loglevel.upper())
    if not isinstance(level, int):
        usage_error(f"--loglevel {loglevel!r}: expected DEBUG, INFO, WARNING or ERROR")
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("headwater").setLevel(level)
    run_worker(config, concurrency=concurrency, name=name)


@app.command()
def workers(
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
    timeout: float = typer.Option(2.0, "--timeout", help="Seconds to wait for replies."),
) -> None:
    """List live workers, what each is running, and the queue depths."""

    def body() -> None:
        from headwater.executor.observe import live_workers, queue_depths
        from headwater.workspace import Workspace

        with Workspace.open(state.config) as ws:
            report: dict[str, Any] = {
                "workers": live_workers(ws.runtime, timeout),
                "queues": queue_depths(ws.runtime),
            }
        if as_json:
            print_json(report)
            return
        if not report["workers"]:
            out.print("no live workers")
        for w in report["workers"]:
            tasks = (
                ", ".join(f"{t['name']}({', '.join(map(str, t['args']))})" for t in w["active"])
                or "idle"
            )
            out.print(f"{w['name']}  queues: {', '.join(w['queues'])}  running: {tasks}")
        for name, depth in report["queues"].items():
            out.print(f"queue {name}: {depth} waiting")

    run_command(body)
