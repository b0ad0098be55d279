"""Rules across sections, checked after each section is valid on its own.

A Celery executor needs a broker and a server manifest; an ingest key's ``sources``
names configured push sources. Each rule returns its problems as lines naming the key
path, so ``load_config`` reports them with every other problem at once.
"""

from __future__ import annotations

from headwater.config.sections import HeadwaterConfig

BROKER_SCHEMES = ("redis://", "rediss://", "amqp://", "amqps://", "pyamqp://")


def executor_problems(config: HeadwaterConfig) -> list[str]:
    """Config errors of ``[executor]`` (an empty list when it is valid).

    Celery workers on several hosts share the manifest, so it must be a server database.
    """
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


def api_key_problems(config: HeadwaterConfig) -> list[str]:
    """``sources`` scopes an ingest key, and names configured push sources only."""
    push = {s.id for s in config.source if s.type == "push"}
    problems = []
    for i, key in enumerate(config.api.keys):
        where = f"api.keys[{i}] (name={key.name}).sources"
        if key.sources and key.role != "ingest":
            problems.append(
                f"{where}: only an ingest key is scoped to sources (role {key.role!r} is not); "
                "remove `sources` from this key"
            )
            continue
        for source_id in key.sources:
            if source_id not in push:
                problems.append(
                    f"{where}: {source_id!r} is not a configured push source; expected one of: "
                    f"{', '.join(sorted(push)) or 'none'}"
                )
    return problems


def executor_warnings(config: HeadwaterConfig) -> list[str]:
    """What works, but only in a narrow deployment: the embedded ``sqlite`` index is a file
    on one host, allowed under Celery only when every worker runs there (a warning, not an
    error; the dispatcher and ``headwater workers`` print it)."""
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
