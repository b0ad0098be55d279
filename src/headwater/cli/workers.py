"""``headwater worker`` (a Celery worker for this workspace) and ``headwater workers``."""

from __future__ import annotations

import os
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
    """Run a Celery worker that executes this workspace's sync and index tasks."""

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
