"""Config rules of the ``[executor]`` section, checked with the rest of the config.

Celery workers on several hosts share the manifest, so it must be a server database;
the embedded ``sqlite`` index is a file on one host, allowed only when every worker runs
there (a warning, not an error).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from headwater.config import HeadwaterConfig

BROKER_SCHEMES = ("redis://", "rediss://", "amqp://", "amqps://", "pyamqp://")


def executor_problems(config: HeadwaterConfig) -> list[str]:
    """Config errors of ``[executor]`` (an empty list when it is valid)."""
    executor = config.executor
    if executor.type != "celery":
        return []
    problems: list[str] = []
    broker = executor.broker_url
    if not broker:
        problems.append(
            "executor.broker_url: required with type = 'celery'; "
            "set e.g. 'redis://host:6379/0' or 'amqp://user:pass@host:5672//'"
        )
    elif not broker.startswith(BROKER_SCHEMES):
        problems.append(
            f"executor.broker_url: {broker.split('@')[-1]!r} is not a Redis or RabbitMQ URL; "
            "expected redis://… or amqp://…"
        )
    url = config.manifest.url
    if url is None or url.startswith("sqlite"):
        problems.append(
            f"manifest.url: {url or 'the default SQLite file'!r} cannot be shared by Celery "
            "workers; expected a PostgreSQL URL, e.g. "
            "'postgresql+psycopg://user@host/headwater' (or set executor.type = 'local')"
        )
    if executor.queues.sync == executor.queues.index:
        problems.append(
            f"executor.queues: sync and index are both {executor.queues.sync!r}; "
            "give them different names so index batches never wait behind source runs"
        )
    return problems


def executor_warnings(config: HeadwaterConfig) -> list[str]:
    """What works, but only in a narrow deployment."""
    if config.executor.type != "celery":
        return []
    local = [i.name for i in config.index if i.type == "sqlite"] or (
        ["main"] if not config.index else []
    )
    return [
        f"index {name!r} is the embedded sqlite index: a file on this host, so every "
        "Celery worker must run on this one host; use a Qdrant server index to spread "
        "workers over several hosts."
        for name in local
    ]
