"""``headwater serve``: the HTTP API and admin page on uvicorn over the same Workspace.

One Workspace (one embedding model) per worker process. ``--with-scheduler`` also runs
the scheduler of ``headwater run`` in a background thread of this process. Binding to a
non-loopback address without any ``[[api.keys]]`` refuses to start. With the global
``--log-format json`` every line it writes is JSON, uvicorn's own included.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from headwater.cli.common import app, run_command, state
from headwater.cli.logs import uvicorn_log_config
from headwater.errors import ConfigError

if TYPE_CHECKING:
    from headwater.api.service import Service
    from headwater.scheduler.daemon import Scheduler

STARTUP_FAILURE = 3  # uvicorn's exit code when it could not start (bind, lifespan)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
    port: int = typer.Option(8700, "--port", min=0, max=65535, help="Port to bind."),
    workers: int = typer.Option(1, "--workers", min=1, max=64, help="Worker processes."),
    with_scheduler: bool = typer.Option(
        False, "--with-scheduler", help="Also run the scheduler (`headwater run`) here."
    ),
) -> None:
    """Serve the HTTP API (/v1, /metrics, /admin) over this workspace."""

    def body() -> None:
        from headwater.api.auth import KeyRing, check_bind
        from headwater.config import load_config

        loaded = load_config(
            state.config if not state.config.is_dir() else state.config / "headwater.toml",
            connector_types={"push": _push_type()},
        )
        check_bind(host, KeyRing.from_config(loaded.config.api.keys))
        check_listen(host, port)
        # Open the workspace here, so a manifest or index that cannot be opened is the
        # usual one-line error and exit code, not a traceback from the ASGI lifespan.
        service = _open_service(loaded.path, workers)
        logging.getLogger("headwater").setLevel(logging.INFO)
        scheduler = _start_scheduler(loaded.path) if with_scheduler else None
        try:
            _run_uvicorn(loaded.path, host, port, workers, service)
        except SystemExit as exc:
            if exc.code != STARTUP_FAILURE:
                raise
            raise ConfigError(
                f"headwater serve could not start on {host}:{port} (the reason is logged "
                "above); fix it, or pick another --host/--port."
            ) from None
        finally:
            if service is not None:
                service.close()  # idempotent: the lifespan closes it on a normal stop
            if scheduler is not None:
                scheduler[0].stop()
                scheduler[1].join(timeout=60)

    run_command(body)


def _open_service(path: Path, workers: int) -> Service | None:
    """The started service of a single worker; with several, None (each worker opens its
    own) once the workspace is known to open."""
    from headwater.api.service import Service, open_workspace

    if workers > 1:
        open_workspace(path).close()
        return None
    service = Service.open(path)
    try:
        service.start()
    except BaseException:
        service.close()
        raise
    return service


def _start_scheduler(path: Path) -> tuple[Scheduler, threading.Thread]:
    """The scheduler of ``headwater run``, serving in a daemon thread of this process."""
    from headwater.runtime import Runtime
    from headwater.scheduler.daemon import Scheduler

    push_types = {"push": _push_type()}
    scheduler = Scheduler(path, open_runtime=lambda p: Runtime.open(p, connector_types=push_types))
    thread = threading.Thread(target=scheduler.serve, name="headwater-scheduler", daemon=True)
    thread.start()
    return scheduler, thread


def _run_uvicorn(path: Path, host: str, port: int, workers: int, service: Service | None) -> None:
    """Serve the app on uvicorn until it stops: in this process, or in ``workers``
    processes that each build the app from the environment."""
    import uvicorn

    from headwater.api.app import CONFIG_ENV, HOST_ENV, create_app
    from headwater.api.balance import WORKERS_ENV
    from headwater.api.parent_watch import MASTER_ENV

    if workers > 1:
        os.environ[CONFIG_ENV] = str(path)
        os.environ[MASTER_ENV] = str(os.getpid())  # each worker ends with this process
        os.environ[HOST_ENV] = host
        os.environ[WORKERS_ENV] = str(workers)  # each worker holds its share of connections
        uvicorn.run(
            "headwater.api.app:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="info",
            log_config=uvicorn_log_config(path, workers) or uvicorn.config.LOGGING_CONFIG,
        )
    else:
        uvicorn.run(
            create_app(path, host=host, service=service),
            host=host,
            port=port,
            log_level="info",
            log_config=uvicorn_log_config(path) or uvicorn.config.LOGGING_CONFIG,
        )


def check_listen(host: str, port: int) -> None:
    """Refuse, as a configuration error, an address this process cannot listen on."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(
            f"--host {host}: {exc.strerror}; give an IP address or a name this machine resolves."
        ) from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; stop what holds "
                "the port or pick another --port (or --host)."
            ) from None


def _push_type() -> type:
    from headwater.connectors.push import PushConnector

    return PushConnector
