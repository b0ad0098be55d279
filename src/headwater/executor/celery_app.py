"""The Celery app, built from a workspace config: broker, queues and delivery rules.

Delivery is at-least-once and safe to repeat: tasks are acknowledged late (after they
finish), rejected back to the queue when their worker process dies, and prefetched one
at a time, so a killed worker loses no task and hoards none. The broker's visibility
timeout (Redis) must exceed the longest task, or a running task is delivered twice
(harmless, since the lease and the claims fence it, but wasted work). Results go to the
manifest database by default (``db+<manifest url>``), so any process can wait on any
task. ``celery -A headwater.executor.celery_app worker`` works too: the module's
``app`` is built on first access from the config named by ``HEADWATER_CONFIG``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery

from headwater.config import LoadedConfig, load_config
from headwater.errors import ConfigError
from headwater.executor.tasks import INDEX_TASK, SYNC_TASK, register_tasks
from headwater.runtime import Runtime

ENV_CONFIG = "HEADWATER_CONFIG"
_apps: dict[str, Celery] = {}


def create_app(loaded: LoadedConfig) -> Celery:
    """A Celery app for ``loaded`` with Headwater's tasks registered."""
    executor = loaded.config.executor
    if executor.type != "celery" or not executor.broker_url:
        raise ConfigError(
            f"{loaded.path}: [executor] type is {executor.type!r}; Celery workers need "
            "type = 'celery' and a broker_url (redis://… or amqp://…)."
        )
    backend = executor.result_backend or f"db+{loaded.manifest_url}"
    app = Celery("headwater", broker=executor.broker_url, backend=backend, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options={"visibility_timeout": executor.visibility_timeout},
        broker_connection_retry_on_startup=True,
        task_routes={
            SYNC_TASK: {"queue": executor.queues.sync},
            INDEX_TASK: {"queue": executor.queues.index},
        },
        task_default_queue=executor.queues.sync,
        task_create_missing_queues=True,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_track_started=True,
        result_extended=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=True,
        database_create_tables_at_setup=True,
    )
    app.conf.headwater_config = str(loaded.path)
    register_tasks(app)
    return app


def app_for(rt: Runtime) -> Celery:
    """The Celery app of the runtime's config (built once per config path)."""
    key = str(rt.loaded.path)
    if key not in _apps:
        _apps[key] = create_app(rt.loaded)
    return _apps[key]


def app_from_env() -> Celery:
    """The app for the config at ``$HEADWATER_CONFIG`` (default ``./headwater.toml``)."""
    path = Path(os.environ.get(ENV_CONFIG, "headwater.toml"))
    return create_app(load_config(path))


_app: Celery | None = None


def __getattr__(name: str) -> Any:
    """``app`` (and ``celery``), built on first access: what ``celery -A`` looks up."""
    global _app
    if name in ("app", "celery"):
        if _app is None:
            _app = app_from_env()
        return _app
    raise AttributeError(name)
